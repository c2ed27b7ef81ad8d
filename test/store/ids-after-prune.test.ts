import { describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query } from '../helpers/store.js';
import { PG_URL, pgQuery, pgSchemas } from '../helpers/pg.js';

// Ids are the schema's own (no verb shows them), so they are read with SQL.
// SPEC §5: fencing tokens, attempt ids and task ids never repeat in a store's life, `prune`
// included (RELIABILITY R24: a run frozen before a prune must not find its token on a new task).

describe('ids after prune (SQLite)', () => {
  // Without AUTOINCREMENT SQLite takes max(id) + 1, which falls back once `prune` deletes the
  // newest rows; migration 007's high-water marks keep pruned ids taken.
  it('a batch run after prune gets attempt (token), task and batch ids never used before', async () => {
    const p = projectWithFiles(3);
    const db = dbPathIn(p.dir);
    expect((await mainIn(p.dir, ['run', 'src', '--batch', 'first', '--exec', 'true'])).code).toBe(0);
    const max = (table: string) => query<{ n: number }>(db, `SELECT max(id) AS n FROM ${table}`)[0]!.n;
    const used = { attempts: max('attempts'), tasks: max('tasks'), batches: max('batches') };
    expect(used).toEqual({ attempts: 3, tasks: 3, batches: 1 });

    expect(await pruneAll(p.dir)).toEqual(['first']);

    expect((await mainIn(p.dir, ['run', 'src', '--batch', 'second', '--exec', 'true'])).code).toBe(0);
    const min = (table: string) => query<{ n: number }>(db, `SELECT min(id) AS n FROM ${table}`)[0]!.n;
    expect(min('attempts')).toBeGreaterThan(used.attempts);
    expect(min('tasks')).toBeGreaterThan(used.tasks);
    expect(min('batches')).toBeGreaterThan(used.batches);
  });
});

/** `prune --older-than 1ms` until it has pruned something (the batch's last activity must be past). */
async function pruneAll(cwd: string, db: string[] = []): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const r = await mainIn(cwd, ['prune', '--older-than', '1ms', '--json', ...db]);
    expect(r.code, r.stderr).toBe(0);
    const pruned = JSON.parse(r.stdout).batches as string[];
    if (pruned.length > 0) return pruned;
  }
  return [];
}

const freshSchema = pgSchemas('ids');
const pgRows = pgQuery;

describe.skipIf(!PG_URL)('ids after prune (PostgreSQL)', () => {
  it('a batch run after prune gets attempt (token), task and batch ids never used before', async () => {
    const { schema, db: url } = freshSchema();
    const db = ['--db', url];
    const p = projectWithFiles(3);
    expect((await mainIn(p.dir, ['run', 'src', '--batch', 'first', '--exec', 'true', ...db])).code).toBe(0);
    const ids = async (fn: 'min' | 'max', table: string) =>
      Number((await pgRows<{ n: string }>(`SELECT ${fn}(id) AS n FROM ${schema}.${table}`))[0]!.n);
    const used = { attempts: await ids('max', 'attempts'), tasks: await ids('max', 'tasks'), batches: await ids('max', 'batches') };
    expect(await pruneAll(p.dir, db)).toEqual(['first']);
    expect((await mainIn(p.dir, ['run', 'src', '--batch', 'second', '--exec', 'true', ...db])).code).toBe(0);
    expect(await ids('min', 'attempts')).toBeGreaterThan(used.attempts);
    expect(await ids('min', 'tasks')).toBeGreaterThan(used.tasks);
    expect(await ids('min', 'batches')).toBeGreaterThan(used.batches);
  });
});
