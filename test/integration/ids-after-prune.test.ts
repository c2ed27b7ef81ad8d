import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query } from '../helpers/store.js';

// SPEC §5: fencing tokens, attempt ids and task ids never repeat in a store's life, `prune`
// included (RELIABILITY R24: a run frozen before a prune must not find its token on a new task).

describe('ids after prune (SQLite)', () => {
  // Product bug: the SQLite store takes the next attempt id as max(id) + 1 (statements.ts,
  // nextAttemptId) and its tables use INTEGER PRIMARY KEY without AUTOINCREMENT, so once `prune`
  // deletes the newest rows, the next batch gets attempt ids (fencing tokens), task ids and batch
  // ids that were already used: here the new batch's first attempt is id 1 again.
  it.fails('a batch run after prune gets attempt (token), task and batch ids never used before', async () => {
    const p = projectWithFiles(3);
    const db = dbPathIn(p.dir);
    expect((await runCli(['run', 'src', '--batch', 'first', '--exec', 'true'], { cwd: p.dir })).code).toBe(0);
    const max = (table: string) => query<{ n: number }>(db, `SELECT max(id) AS n FROM ${table}`)[0]!.n;
    const used = { attempts: max('attempts'), tasks: max('tasks'), batches: max('batches') };
    expect(used).toEqual({ attempts: 3, tasks: 3, batches: 1 });

    // Its last activity is now at least a millisecond old.
    const deadline = Date.now() + 10_000;
    let pruned: string[] = [];
    while (pruned.length === 0 && Date.now() < deadline) {
      const r = await runCli(['prune', '--older-than', '1ms', '--json'], { cwd: p.dir });
      expect(r.code).toBe(0);
      pruned = JSON.parse(r.stdout).batches;
    }
    expect(pruned).toEqual(['first']);

    expect((await runCli(['run', 'src', '--batch', 'second', '--exec', 'true'], { cwd: p.dir })).code).toBe(0);
    const min = (table: string) => query<{ n: number }>(db, `SELECT min(id) AS n FROM ${table}`)[0]!.n;
    expect(min('attempts')).toBeGreaterThan(used.attempts);
    expect(min('tasks')).toBeGreaterThan(used.tasks);
    expect(min('batches')).toBeGreaterThan(used.batches);
  });
});
