import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, startCli, tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { dbPathIn, query } from '../helpers/store.js';

// Issue 16 item 9: prune deleted a big batch in one transaction and held the write lock for
// seconds (~10 s on 1.2M tasks), so a run sharing the store hit its busy timeout. It deletes in
// bounded chunks now, each a short transaction, and stays crash-safe. The prunes here are real
// processes: one beside a writer in this process that blocks its thread while it waits for the
// lock, one SIGKILLed by a failpoint half-way. Raw SQL reads what
// only the tables can say: rows left after a kill, orphans, the integrity check.

const TASKS = 100_000;

/** A store holding one finished batch of TASKS tasks (one succeeded, the rest cancelled). */
async function bigFinishedBatch(): Promise<string> {
  const dir = tempDir('sd-prune-');
  writeFileSync(join(dir, 'big.txt'), Array.from({ length: TASKS }, (_, i) => `line ${i}\n`).join(''));
  const run = await runCli(['run', 'big.txt', '--exec', 'true', '--lines', '1', '-j', '1', '--max-runtime', '1ms', '--quiet'], { cwd: dir });
  expect(run.code, run.stderr).toBe(3);
  const cancel = await runCli(['cancel'], { cwd: dir });
  expect(cancel.code, cancel.stderr).toBe(0);
  return dir;
}

const count = (db: string, table: string) => query<{ n: number }>(db, `SELECT count(*) AS n FROM ${table}`)[0]!.n;

describe('prune deletes a big batch in bounded chunks', () => {
  it('a writer with a 300 ms busy timeout never fails while prune deletes 100k tasks', async () => {
    const dir = await bigFinishedBatch();
    const db = dbPathIn(dir);
    const prune = startCli(['prune', '--older-than', '0s'], { cwd: dir });
    let exited = false;
    void prune.result.then(() => (exited = true));
    const writer = new Database(db, { timeout: 300 });
    const failures: string[] = [];
    let writes = 0;
    try {
      while (!exited) {
        try {
          writer.exec('BEGIN IMMEDIATE');
          writer.exec('COMMIT');
          writes++;
        } catch (err) {
          failures.push((err as Error).message);
        }
        await new Promise((r) => setTimeout(r, 5));
      }
    } finally {
      writer.close();
    }
    const r = await prune.result;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`pruned 1 batch .*: ${TASKS} tasks, [12] attempts`)); // the one that ran, and maybe one queued behind it
    expect(failures).toEqual([]);
    expect(writes).toBeGreaterThan(0);
    expect(count(db, 'tasks')).toBe(0);
    expect(count(db, 'batches')).toBe(0);
  }, 60_000);

  it('a prune killed half-way leaves a consistent store of finished tasks; running it again finishes', async () => {
    const dir = await bigFinishedBatch();
    const db = dbPathIn(dir);
    // Killed right after its 10th committed write: some chunks deleted, the rest not.
    const killed = await runCli(['prune', '--older-than', '0s'], { cwd: dir, env: { SPLITDANCE_FAILPOINT: 'write:10' } });
    expect(killed.signal).toBe('SIGKILL');
    const left = count(db, 'tasks');
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(TASKS);
    expect(count(db, 'batches')).toBe(1);
    expect(query(db, "SELECT 1 FROM tasks WHERE status NOT IN ('SUCCESS', 'CANCELLED')")).toEqual([]);
    expect(query(db, 'SELECT 1 FROM attempts a LEFT JOIN tasks t ON t.id = a.task_id WHERE t.id IS NULL')).toEqual([]);
    expect(query(db, 'PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }]);
    const status = await mainIn(dir, ['status', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ total: left, done: true });
    const again = await mainIn(dir, ['prune', '--older-than', '0s']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(new RegExp(`pruned 1 batch .*: ${left} tasks`));
    expect(count(db, 'tasks')).toBe(0);
    expect(count(db, 'attempts')).toBe(0);
    expect(count(db, 'batches')).toBe(0);
  }, 60_000);
});
