import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query } from '../helpers/store.js';

// SPEC §5: fencing tokens, attempt ids and task ids never repeat in a store's life, `prune`
// included (RELIABILITY R24: a run frozen before a prune must not find its token on a new task).

describe('ids after prune (SQLite)', () => {
  // Without AUTOINCREMENT SQLite takes max(id) + 1, which falls back once `prune` deletes the
  // newest rows; migration 007's high-water marks keep pruned ids taken.
  it('a batch run after prune gets attempt (token), task and batch ids never used before', async () => {
    const p = projectWithFiles(3);
    const db = dbPathIn(p.dir);
    expect((await runCli(['run', 'src', '--batch', 'first', '--exec', 'true'], { cwd: p.dir })).code).toBe(0);
    const max = (table: string) => query<{ n: number }>(db, `SELECT max(id) AS n FROM ${table}`)[0]!.n;
    const used = { attempts: max('attempts'), tasks: max('tasks'), batches: max('batches') };
    expect(used).toEqual({ attempts: 3, tasks: 3, batches: 1 });

    expect(await pruneAll(p.dir)).toEqual(['first']);

    expect((await runCli(['run', 'src', '--batch', 'second', '--exec', 'true'], { cwd: p.dir })).code).toBe(0);
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
    const r = await runCli(['prune', '--older-than', '1ms', '--json', ...db], { cwd });
    expect(r.code, r.stderr).toBe(0);
    const pruned = JSON.parse(r.stdout).batches as string[];
    if (pruned.length > 0) return pruned;
  }
  return [];
}

const PG_URL = process.env.SPLITDANCE_PG_URL;
const schemas: string[] = [];
async function pgRows<T>(text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    return (await client.query(text)).rows as T[];
  } finally {
    await client.end();
  }
}
afterAll(async () => {
  for (const s of schemas) await pgRows(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
});

describe.skipIf(!PG_URL)('ids after prune (PostgreSQL)', () => {
  it('a batch run after prune gets attempt (token), task and batch ids never used before', async () => {
    const schema = `ids_${process.pid}_${Date.now() % 100000}`;
    schemas.push(schema);
    const db = ['--db', `${PG_URL}${PG_URL!.includes('?') ? '&' : '?'}schema=${schema}`];
    const p = projectWithFiles(3);
    expect((await runCli(['run', 'src', '--batch', 'first', '--exec', 'true', ...db], { cwd: p.dir })).code).toBe(0);
    const ids = async (fn: 'min' | 'max', table: string) =>
      Number((await pgRows<{ n: string }>(`SELECT ${fn}(id) AS n FROM ${schema}.${table}`))[0]!.n);
    const used = { attempts: await ids('max', 'attempts'), tasks: await ids('max', 'tasks'), batches: await ids('max', 'batches') };
    expect(await pruneAll(p.dir, db)).toEqual(['first']);
    expect((await runCli(['run', 'src', '--batch', 'second', '--exec', 'true', ...db], { cwd: p.dir })).code).toBe(0);
    expect(await ids('min', 'attempts')).toBeGreaterThan(used.attempts);
    expect(await ids('min', 'tasks')).toBeGreaterThan(used.tasks);
    expect(await ids('min', 'batches')).toBeGreaterThan(used.batches);
  });
});
