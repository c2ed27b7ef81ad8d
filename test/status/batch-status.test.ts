import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open-store.js';
import type { BatchRecord, ClaimedTask, Settlement, TaskStore } from '../../src/store/task-store.js';
import { batchStatus } from '../../src/status/batch-status.js';
import { LiveView } from '../../src/status/live-view.js';
import { LEARNED_RANK } from '../../src/store/task-spec.js';

// SPEC §6: a rate shown anywhere is over time spent running, not since the batch was created;
// an ETA cannot promise a task sooner than its retry is due. Attempts are made with the store's
// own verbs at known times, on a real SQLite store.

let dir: string;
let store: TaskStore;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sd-status-'));
  store = await openStore(join(dir, 'store.db'), 'create');
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const keys = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`);

async function batchOf(n: number, job: Record<string, unknown> = {}): Promise<BatchRecord> {
  const specs = keys(n).map((key) => ({ key, payload: { version: 1 as const, path: `/data/${key}`, rel: key }, fingerprint: `${key}:1` }));
  const job1 = { version: 1, handler: { exec: 'true' }, retries: 3, backoffMs: 5000, backoffFactor: 5, maxBackoffMs: 3_600_000, jitter: 0, stages: [], ...job };
  return (await store.enqueue({ name: 'b', source: '/data', job: job1, maxAttempts: 4 }, specs)).batch;
}

const claim = (batch: BatchRecord, now: number, slots: number, owner = 'run-1'): Promise<ClaimedTask[]> =>
  store.claim({ batchId: batch.id, owner, host: 'h', now, leaseMs: 600_000, slots: Array.from({ length: slots }, (_, i) => ({ workerId: `w${i + 1}`, pid: 100 + i })) });

const end = (t: ClaimedTask, endedAt: number, retryAt?: number): Settlement => ({
  token: t.token,
  taskId: t.id,
  outcome: retryAt === undefined ? 'SUCCESS' : 'FAILED',
  endedAt,
  durationMs: 10,
  exitCode: retryAt === undefined ? 0 : 1,
  signal: null,
  error: retryAt === undefined ? null : 'exit code 1',
  outputTail: '',
  logPath: null,
  ...(retryAt === undefined ? {} : { retryAt }),
});

describe('the rate is the whole run’s: tasks over time spent running, waits for retries included', () => {
  it('5 tasks of 10 ms that took 21 s because of two retries run at about 5 / 21 s', async () => {
    const b = await batchOf(5);
    const t0 = Date.now() - 60_000;
    const first = await claim(b, t0, 5);
    await store.settle([end(first[0]!, t0 + 10), end(first[1]!, t0 + 10), end(first[2]!, t0 + 10), end(first[3]!, t0 + 10, t0 + 5000), end(first[4]!, t0 + 10, t0 + 5000)]);
    const second = await claim(b, t0 + 5000, 2);
    await store.settle([end(second[0]!, t0 + 5010), end(second[1]!, t0 + 5010, t0 + 20_990)]);
    const third = await claim(b, t0 + 20_990, 1);
    await store.settle([end(third[0]!, t0 + 21_000)]);

    const s = await batchStatus(store, b);
    expect(s.done).toBe(true);
    // 30 ms of commands, 21 s of running: the rate is 5 / 21 s, not 5 / 30 ms.
    expect(s.tasksPerSecond!).toBeCloseTo(5 / 21, 2);
    expect(s.etaSeconds).toBe(0);
  });
});

describe('the ETA sees the backoff still ahead', () => {
  it('a task whose retry is due in 60 s is not done sooner, however fast the others went', async () => {
    const b = await batchOf(3);
    const now = Date.now();
    const t0 = now - 2000;
    const ts = await claim(b, t0, 3);
    await store.settle([end(ts[0]!, t0 + 100), end(ts[1]!, t0 + 100), end(ts[2]!, t0 + 100, now + 60_000)]);

    const s = await batchStatus(store, b);
    expect(s.retrying).toBe(1);
    expect(s.tasksPerSecond).not.toBeNull();
    expect(s.etaSeconds!).toBeGreaterThanOrEqual(58);
    expect(s.etaSeconds!).toBeLessThanOrEqual(60 + Math.ceil(1 / s.tasksPerSecond!) + 1);
  });

  it('the live view’s ETA too (rate over the last minute)', async () => {
    const b = await batchOf(3);
    const now = Date.now();
    const view = new LiveView(store, b);
    await view.tick(now - 5000);
    const ts = await claim(b, now - 4000, 3);
    await store.settle([end(ts[0]!, now - 3900), end(ts[1]!, now - 3900), end(ts[2]!, now - 3900, now + 60_000)]);
    const f = await view.tick(now);
    expect(f.ratePerSecond).toBeCloseTo(2 / 5, 5);
    // One task left at 0.4 tasks/s would be 3 s; its retry is due in 60 s.
    expect(f.etaSeconds!).toBeGreaterThanOrEqual(58);
  });
});

describe('the ETA weighs learned durations (--order history)', () => {
  /** A batch of 11 keys ordered by history: t0 took 10 s in earlier batches, t1…t10 0.1 s each. */
  async function historyBatch(order: string): Promise<BatchRecord> {
    const learned = (key: string) => (key === 't0' ? 10_000 : 100);
    const specs = keys(11).map((key) => ({
      key,
      payload: { version: 1 as const, path: `/data/${key}`, rel: key },
      fingerprint: `${key}:1`,
      ...(order === 'history' ? { rank: -LEARNED_RANK - learned(key) } : {}),
    }));
    const job = { version: 1, handler: { exec: 'true' }, retries: 3, backoffMs: 5000, backoffFactor: 5, maxBackoffMs: 3_600_000, jitter: 0, stages: [], order };
    return (await store.enqueue({ name: 'b', source: '/data', job, maxAttempts: 4 }, specs)).batch;
  }

  it('the slow key done first, the ten fast ones left: 10 × 0.1 s, not 10 × the slow one’s time', async () => {
    for (const order of ['history', 'key'] as const) {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
      dir = mkdtempSync(join(tmpdir(), 'sd-status-'));
      store = await openStore(join(dir, 'store.db'), 'create');
      const b = await historyBatch(order);
      const now = Date.now();
      const [slow] = await claim(b, now - 10_000, 1);
      expect(slow!.key).toBe('t0');
      await store.settle([end(slow!, now)]);
      const s = await batchStatus(store, b);
      // One task in 10 s: 0.1 tasks/s. Ten more by count alone is 100 s; weighed, 10 × 100 / 10,000 of it.
      expect(s.tasksPerSecond!).toBeCloseTo(0.1, 2);
      if (order === 'history') expect(s.etaSeconds!).toBeLessThanOrEqual(2);
      else expect(s.etaSeconds!).toBeGreaterThanOrEqual(99);
      expect(await store.learnedWork(b.id)).toEqual(order === 'history' ? { openKnown: 10, openMs: 1000, doneKnown: 1, doneMs: 10_000 } : { openKnown: 0, openMs: 0, doneKnown: 0, doneMs: 0 });
    }
  });
});
