import Database from 'better-sqlite3';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler } from '../helpers/cli.js';
import { mainIn, setProcessEnv } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query } from '../helpers/store.js';

/** Each inspection below does little work; far above this means folding is not linear (old code: minutes). */
const LOOK_MS = 40_000;

/** An inspection, in this process: its exit code is status's verdict or 0, and it took less than LOOK_MS. */
async function look(dir: string, args: readonly string[]) {
  const started = performance.now();
  const r = await mainIn(dir, [...args]);
  expect(performance.now() - started, args.join(' ')).toBeLessThan(LOOK_MS);
  expect([0, 1], args.join(' ')).toContain(r.code);
  return r;
}

const inspections = (dir: string) =>
  [
    ['status'],
    ['status', '--json'],
    ['show', 'f000.log'],
    ['report', '--html', join(dir, 'r.html')],
  ] as const;

describe('texts from handlers are bounded and folded in linear time', () => {
  it('a 10 MB error is stored as its first 4 KiB; status, show and report read it at once', async () => {
    const p = projectWithFiles(3);
    const r = await mainIn(p.dir, ['run', 'src', '--handler', handler('huge-error'), '--retries', '1', '--backoff', '10ms']);
    expect(r.code, r.stderr.slice(0, 500)).toBe(1);
    const db = dbPathIn(p.dir);
    const errors = [
      ...query<{ e: string }>(db, 'SELECT last_error AS e FROM tasks'),
      ...query<{ e: string }>(db, 'SELECT error AS e FROM attempts'),
    ].map((row) => row.e);
    expect(errors).toHaveLength(3 + 6);
    for (const e of errors) {
      expect(Buffer.byteLength(e)).toBeLessThanOrEqual(4096);
      expect(e).toMatch(/^x{4000,} … \(\d+ bytes more, not kept\)$/);
    }
    // 9 errors of 10 MB each made a store of about 90 MB.
    expect(statSync(db).size).toBeLessThan(2_000_000);
    for (const args of inspections(p.dir)) await look(p.dir, args);
  }, 120_000);

  // The store is written directly: the rows an older version left.
  it('a store that already holds 10 MB errors (an older version wrote them) folds them as fast', async () => {
    const p = projectWithFiles(3);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'false', '--retries', '0'])).code).toBe(1);
    const db = new Database(dbPathIn(p.dir));
    // Words without a space, a slash or a quote: the shapes the folding rescanned from every position.
    const huge = ['a'.repeat(10_000_000), '1.'.repeat(5_000_000), `${'1'.repeat(10_000_000)}g`];
    huge.forEach((e, i) => db.prepare('UPDATE tasks SET last_error = ? WHERE task_key = ?').run(e, `f00${i}.log`));
    db.prepare('UPDATE attempts SET error = (SELECT last_error FROM tasks WHERE tasks.id = attempts.task_id)').run();
    db.close();
    for (const args of inspections(p.dir)) await look(p.dir, args);
    const json = await look(p.dir, ['status', '--json']);
    expect(JSON.parse(json.stdout).topErrors).toHaveLength(3);
  }, 5 * LOOK_MS);

  it('a module result above 1 MiB fails its task for good, naming the limit; one below it is stored whole', async () => {
    const p = projectWithFiles(2);
    // Read by the handler, in the workers this process forks.
    const restore = setProcessEnv({ HUGE_RESULT_BYTES: '3000000' });
    const big = await mainIn(p.dir, ['run', 'src', '--handler', handler('huge-result'), '--retries', '3', '--backoff', '10ms']).finally(restore);
    expect(big.code).toBe(1);
    const rows = JSON.parse((await mainIn(p.dir, ['tasks', '--json'])).stdout) as { status: string; attempts: number; result: unknown; lastError: string }[];
    expect(rows).toHaveLength(2);
    for (const t of rows) {
      expect(t).toMatchObject({ status: 'FAILED', attempts: 1, result: null });
      expect(t.lastError).toMatch(/the result is 2\.9 MiB of JSON, above the limit of 1 MiB/);
    }
    expect(statSync(dbPathIn(p.dir)).size).toBeLessThan(1_000_000);

    const restoreSmall = setProcessEnv({ HUGE_RESULT_BYTES: '900000' });
    const ok = await mainIn(p.dir, ['run', 'src', '--handler', handler('huge-result'), '--batch', 'small']).finally(restoreSmall);
    expect(ok.code, ok.stderr).toBe(0);
    // The stored text's length: what the store keeps, byte for byte.
    const stored = query<{ n: number }>(dbPathIn(p.dir), "SELECT length(result) AS n FROM tasks WHERE status = 'SUCCESS'");
    expect(stored.map((s) => s.n)).toEqual([900_011, 900_011]);
  }, 120_000);
});
