import { afterEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, handler, tempDir } from '../helpers/cli.js';
import { mainIn, setProcessEnv } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, storedAttempts, storedTasks } from '../helpers/store.js';

const show = async (dir: string, key: string) => JSON.parse((await mainIn(dir, ['show', key, '--json'])).stdout);

let restoreEnv = () => {};
afterEach(() => restoreEnv());

describe('retries and backoff', () => {
  it('a handler failing twice then succeeding shows 3 attempts spaced by the backoff', async () => {
    const p = projectWithFiles(1);
    const r = await mainIn(p.dir, ['run', 'src', '--handler', handler('fail-twice'), '--backoff', '300ms', '--backoff-factor', '2', '--jitter', '0', '-j', '1']);
    expect(r.code, r.stderr).toBe(0);
    const t = await show(p.dir, 'f000.log');
    expect(t.status).toBe('SUCCESS');
    expect(t.attempts.map((a: { outcome: string }) => a.outcome)).toEqual(['FAILED', 'FAILED', 'SUCCESS']);
    expect(t.attempts.map((a: { attempt: number }) => a.attempt)).toEqual([1, 2, 3]);
    expect(t.attempts[0].error).toBe('transient failure on attempt 1');
    const gap = (i: number) => Date.parse(t.attempts[i + 1].startedAt) - Date.parse(t.attempts[i].endedAt);
    expect(gap(0)).toBeGreaterThanOrEqual(300);
    expect(gap(1)).toBeGreaterThanOrEqual(600);
    expect(gap(1)).toBeLessThan(3000);
    expect(t.result).toEqual({ attempt: 3 });
    for (const a of t.attempts) {
      expect(a.startedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(a).toHaveProperty('workerId');
      expect(a.host).toBeTruthy();
      expect(a.pid).toBeGreaterThan(0);
    }
  });

  it('R45: in a batch of 3000 never-tried tasks, a failed or crashed attempt retries in its turn, not after every new task', async () => {
    const dir = tempDir();
    const tasks = 3000;
    writeFileSync(join(dir, 'ids.txt'), Array.from({ length: tasks }, (_, i) => `${i}\n`).join(''));
    // Lines 20, 40, … 200 are the early tasks: even ones fail, odd ones crash their worker, once.
    // Read by the handler, in the workers.
    restoreEnv = setProcessEnv({ FAIL_ONCE: ':00(02|06|10|14|18)9$', CRASH_ONCE: ':00(04|08|12|16)9$|:00199$' });
    const r = await mainIn(dir, ['run', 'ids.txt', '--lines', '1', '--handler', handler('fail-once'), '--backoff', '100ms', '-j', '2']);
    expect(r.code, r.stderr).toBe(0);
    // Attempt ids are fencing tokens, drawn in claim order.
    const attempts = await storedAttempts(dbPathIn(dir));
    // A retry queued on a worker that another task's crash took down ends INTERRUPTED and runs again under the same number.
    const retries = attempts.filter((a) => a.attempt === 2 && a.outcome !== 'INTERRUPTED');
    const keys = ['029', '049', '069', '089', '109', '129', '149', '169', '189', '199'].map((n) => `ids.txt:00${n}`);
    expect(retries.map((a) => a.key).sort()).toEqual(keys);
    const firstOf = new Map<string, { id: number; outcome: string | null }>();
    for (const a of attempts) if (!firstOf.has(a.key)) firstOf.set(a.key, a);
    // Attempts queued on a worker that crashed end INTERRUPTED, uncharged, and run again as never tried.
    const charged = attempts.filter((a) => a.attempt === 1 && keys.includes(a.key) && a.outcome !== 'INTERRUPTED');
    expect(charged.map((a) => a.outcome).sort()).toEqual([...Array(5).fill('CRASHED'), ...Array(5).fill('FAILED')]);
    // Never-tried tasks start in key order.
    expect([...firstOf.keys()]).toEqual([...firstOf.keys()].sort());
    expect(firstOf.size).toBe(tasks);
    // A retry is due 100 ms (± 10 %) after its attempt ended and is claimed once due, while
    // most of the batch is still waiting. Before, it waited behind every never-tried task.
    for (const retry of retries) {
      const newAfter = [...firstOf.values()].filter((a) => a.id > retry.id).length;
      expect(newAfter, `${retry.key}'s retry ran with ${newAfter} never-tried tasks left`).toBeGreaterThan(tasks / 2);
    }
  }, 120_000);

  it('a task failing every time ends FAILED after 1 + retries attempts; exit 1', async () => {
    const p = projectWithFiles(2);
    const r = await mainIn(p.dir, ['run', 'src', '--handler', handler('fail'), '--retries', '2', '--backoff', '50ms', '-j', '2']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/FAILED f000\.log after 3 attempts: cannot process .*: boom/);
    const rows = (await storedTasks(dbPathIn(p.dir))).map(({ status, attempts }) => ({ status, attempts }));
    expect(rows).toEqual([
      { status: 'FAILED', attempts: 3 },
      { status: 'FAILED', attempts: 3 },
    ]);
    const s = JSON.parse((await mainIn(p.dir, ['status', '--json'])).stdout);
    expect(s.topErrors).toHaveLength(1);
    expect(s.topErrors[0].count).toBe(2);
  });

  it('--backoff 0s with more retries than factor^(k-1) can count: every attempt runs, none waits a NaN delay', async () => {
    const p = projectWithFiles(1);
    // 100^(k-1) overflows to Infinity by retry 156; 0 × Infinity was a NaN retry time, and the task ended early.
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'false', '--retry-quiet', '--retries', '200', '--backoff', '0s', '--backoff-factor', '100']);
    expect(r.code, r.stderr).toBe(1);
    expect((await storedTasks(dbPathIn(p.dir))).map(({ status, attempts }) => ({ status, attempts }))).toEqual([{ status: 'FAILED', attempts: 201 }]);
    expect((await storedAttempts(dbPathIn(p.dir))).filter((a) => a.outcome === 'FAILED')).toHaveLength(201);

    const over = await mainIn(p.dir, ['run', 'src', '--batch', 'b', '--exec', 'false', '--backoff-factor', '101']);
    expect(over.code).toBe(2);
    expect(over.stderr).toMatch(/--backoff-factor expects a number from 1 to 100; got "101"/);
  });

  it('PermanentError and --permanent-codes fail at once, without retries', async () => {
    const p = projectWithFiles(1);
    const r = await mainIn(p.dir, ['run', 'src', '--handler', handler('permanent'), '--backoff', '50ms']);
    expect(r.code).toBe(1);
    const t = await show(p.dir, 'f000.log');
    expect(t.attempts).toHaveLength(1);
    expect(t.lastError).toBe('PermanentError: input is not a log file');

    const c = projectWithFiles(1);
    expect((await mainIn(c.dir, ['run', 'src', '--handler', handler('permanent-class')])).code).toBe(1);
    const tc = await show(c.dir, 'f000.log');
    expect(tc.attempts).toHaveLength(1);
    expect(tc.lastError).toBe('PermanentError: f000.log can never succeed');

    const q = projectWithFiles(2);
    const r2 = await mainIn(q.dir, ['run', 'src', '--exec', 'case {key} in f000.log) exit 64;; *) exit 1;; esac', '--permanent-codes', '64', '--retry-quiet', '--retries', '1', '--backoff', '50ms']);
    expect(r2.code).toBe(1);
    const rows = (await storedTasks(dbPathIn(q.dir))).map(({ key, attempts }) => ({ key, attempts })).sort((a, b) => (a.key < b.key ? -1 : 1));
    expect(rows).toEqual([
      { key: 'f000.log', attempts: 1 },
      { key: 'f001.log', attempts: 2 },
    ]);
  });

  it('retry-failed gives FAILED tasks a fresh budget, filtered by --key, and --run runs them', async () => {
    const p = projectWithFiles(3);
    const marker = `${p.dir}/fixed`;
    const exec = `test -e '${marker}' || exit 3`;
    expect((await mainIn(p.dir, ['run', 'src', '--exec', exec, '--retries', '0'])).code).toBe(1);
    const reset = await mainIn(p.dir, ['retry-failed', '--key', 'f00[01].log', '--json']);
    expect(reset.code).toBe(0);
    expect(JSON.parse(reset.stdout).reset).toBe(2);
    const s = JSON.parse((await mainIn(p.dir, ['status', '--json'])).stdout);
    expect(s).toMatchObject({ pending: 2, failed: 1, retrying: 0 });
    await mainIn(p.dir, ['run', 'src', '--exec', `touch '${marker}'`]).then((r) => expect(r.code).toBe(1));
    const after = (await storedTasks(dbPathIn(p.dir))).sort((a, b) => (a.key < b.key ? -1 : 1));
    expect(after.map((t) => t.status)).toEqual(['SUCCESS', 'SUCCESS', 'FAILED']);
    const again = await mainIn(p.dir, ['retry-failed', '--run']);
    expect(again.code, again.stderr).toBe(0);
    const t = await show(p.dir, 'f002.log');
    expect(t.status).toBe('SUCCESS');
    expect(t.attempts.map((a: { outcome: string }) => a.outcome)).toEqual(['FAILED', 'SUCCESS']);
  });
});

describe('TypeScript handlers', () => {
  it('a .ts handler with a type import and an enum runs on Node 20 and its result is stored', async () => {
    const p = projectWithFiles(2);
    const r = await mainIn(p.dir, ['run', 'src', '--handler', join(FIXTURES, 'handlers', 'typed.ts')]);
    expect(r.code, r.stderr).toBe(0);
    const t = await show(p.dir, 'f001.log');
    expect(t.result).toEqual({ key: 'f001.log', severity: 'High', level: 2 });
    expect(t.attempts[0].outputTail).toBe('typed handler on f001.log\n');
  });
});
