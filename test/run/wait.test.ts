import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mainIn, startIn } from '../helpers/in-process-cli.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';
import { attemptsIn, tasksIn } from '../helpers/read-store.js';

// `splitdance wait` (SPEC §10): blocks until the batch is done, whoever runs it, and exits with
// its verdict: 0, 1 with failures, 3 when --timeout comes first; one line, the verdict.

const newSchema = pgSchemas('sd_wait');
const STORES = [{ store: 'SQLite', db: (): string[] => [] }, ...(PG_URL ? [{ store: 'PostgreSQL', db: () => ['--db', newSchema().db] }] : [])];

function project(n: number) {
  const { dir } = projectWithFiles(n, 'sd-wait-');
  return { dir, dbPath: (db: string[]) => db[1] ?? join(dir, '.splitdance', 'splitdance.db') };
}

/** Fails f002.log (exit 1), sleeps `s` seconds on each file. */
const exec = (s: number) => `sleep ${s}; case {} in *f002.log) exit 1;; esac`;

describe.each(STORES)('wait on $store', ({ db: dbFor }) => {
  it('against a run and a worker on one batch: returns once every task is terminal, exit 1 with the failure, one line', async () => {
    const p = project(12);
    const db = dbFor();
    const run = startIn(p.dir, ['run', 'src', '--batch', 'nightly', '--exec', exec(0.2), '--retries', '0', '-j', '2', ...db]);
    // Started before the run made the batch: it waits for it to appear.
    const waited = startIn(p.dir, ['wait', '--batch', 'nightly', '--interval', '100ms', ...db]);
    const worker = startIn(p.dir, ['worker', '--batch', 'nightly', '-j', '2', ...db]);
    const w = await waited.done;
    const doneAt = Date.now();
    expect(w.code, w.stderr).toBe(1);
    expect(w.stdout).toBe('');
    expect(w.stderr).toBe('done with failures: 1 failed, 11 succeeded of 12 (batch nightly)\n');
    // Every task had ended when it returned (it is not a guess from a count).
    const ends = (await attemptsIn(p.dbPath(db))).map((a) => a.endedAt!);
    expect(Math.max(...ends)).toBeLessThanOrEqual(doneAt);
    expect((await tasksIn(p.dbPath(db))).filter((t) => t.status !== 'SUCCESS').map((t) => [t.key, t.status])).toEqual([['f002.log', 'FAILED']]);
    expect((await run.done).code).toBe(1);
    expect((await worker.done).code).toBeLessThanOrEqual(1);
    // On a done batch it returns at once, with the same verdict; --json: the status object.
    const again = await mainIn(p.dir, ['wait', '--json', ...db]);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout)).toMatchObject({ batch: 'nightly', total: 12, succeeded: 11, failed: 1, done: true });
  });

  it('--timeout shorter than the batch: exit 3 naming what is left; the batch goes on, the store untouched by the wait', async () => {
    const p = project(6);
    const db = dbFor();
    const run = startIn(p.dir, ['run', 'src', '--exec', 'sleep 1', '-j', '1', ...db]);
    const appeared = await mainIn(p.dir, ['wait', '--batch', 'src-*', '--timeout', '50ms', '--quiet', ...db]);
    expect(appeared.code).toBe(3); // a glob is a name: no batch of that name appears
    expect(appeared.stderr).toMatch(/^batch "src-\*" did not appear in .* within 50ms\n$/); // a failure's summary, --quiet or not
    for (let i = 0; i < 200 && (await mainIn(p.dir, ['status', '--json', ...db])).code !== 3; i++) await new Promise((r) => setTimeout(r, 25));
    const before = JSON.stringify(await tasksIn(p.dbPath(db)));
    const w = await mainIn(p.dir, ['wait', '--timeout', '300ms', ...db]);
    expect(w.code).toBe(3);
    expect(w.stderr).toMatch(/^not done after 300ms: [1-6] to go \((\d+ pending, )?(1 running)?(, )?(1 queued)?\) of 6 \(batch src-[0-9a-f]+\)\n$/);
    expect((await run.done).code).toBe(0);
    expect(before).not.toBe(JSON.stringify(await tasksIn(p.dbPath(db)))); // the run went on after
    const settled = JSON.stringify([await tasksIn(p.dbPath(db)), await attemptsIn(p.dbPath(db))]);
    const done = await mainIn(p.dir, ['wait', '--timeout', '1h', ...db]);
    expect([done.code, done.stderr]).toEqual([0, expect.stringMatching(/^done: 6 succeeded of 6 \(batch src-[0-9a-f]+\)\n$/)]);
    expect(JSON.stringify([await tasksIn(p.dbPath(db)), await attemptsIn(p.dbPath(db))])).toBe(settled);
  });

  it('--quiet says nothing on success, the verdict on failure; a paused batch is said once and is not done', async () => {
    const p = project(3);
    const db = dbFor();
    expect((await mainIn(p.dir, ['run', 'src', '--exec', exec(0), '--retries', '0', '--batch', 'q', ...db])).code).toBe(1);
    const quiet = await mainIn(p.dir, ['wait', '--quiet', ...db]);
    expect([quiet.code, quiet.stdout, quiet.stderr]).toEqual([1, '', 'done with failures: 1 failed, 2 succeeded of 3 (batch q)\n']);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--batch', 'p', '--max-runtime', '1ms', '-j', '1', ...db]);
    expect(r.code).toBe(3);
    expect((await mainIn(p.dir, ['pause', '--batch', 'p', ...db])).code).toBe(0);
    const paused = await mainIn(p.dir, ['wait', '--batch', 'p', '--timeout', '500ms', '--interval', '100ms', ...db]);
    expect(paused.code).toBe(3);
    const lines = paused.stderr.trim().split('\n');
    expect(lines[0]).toMatch(/^batch p is paused: it is not done until `splitdance resume --batch p( --db \S+)?`$/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^not done after 500ms: /);
  });
});

describe('wait: its flags', () => {
  it('a bad --timeout or --interval is exit 2 naming it; no store is exit 4 as for status; wait writes nothing', async () => {
    const p = project(1);
    for (const [flag, value] of [
      ['--timeout', '0s'],
      ['--timeout', 'soon'],
      ['--interval', '0s'],
    ]) {
      const r = await mainIn(p.dir, ['wait', flag!, value!]);
      expect(r.code, `${flag} ${value}`).toBe(2);
      expect(r.stderr).toContain(flag);
    }
    const none = await mainIn(p.dir, ['wait']);
    expect(none.code).toBe(4);
    expect(none.code).toBe((await mainIn(p.dir, ['status'])).code);
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
  });
});
