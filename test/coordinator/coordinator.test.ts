/** The tick in-process: the real coordinator on a real SQLite store, with a pool of fake slots the test answers for. */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { DeclaredOutputs } from '../../src/coordinator/declared-outputs.js';
import type { RunObserver, RunPool, StopReason } from '../../src/coordinator/run-types.js';
import type { RetryRules } from '../../src/coordinator/settlement.js';
import { DEFAULT_SETTINGS, definitionOf, settingsOf, storedDefinition } from '../../src/job/job-definition.js';
import type { PoolEvents, PoolWorker } from '../../src/pool/pool.js';
import { openStore } from '../../src/store/open-store.js';
import type { BatchRecord, Outcome, TaskSpec, TaskStatus, TaskStore } from '../../src/store/task-store.js';
import type { DoneMessage, TaskMessage } from '../../src/worker/protocol.js';
import { tempDir } from '../helpers/cli.js';

/** How the test's fake worker answers an attempt: a success, or a failure (retryable or not). */
type Answer = { ok: true } | { ok: false; retryable: boolean };

/**
 * Slots that hold one attempt each and never run anything: each attempt handed out is
 * answered on a later loop turn (as a worker's IPC message arrives) with what `answer` says.
 */
class FakePool implements RunPool {
  private events!: PoolEvents;
  readonly workers: PoolWorker[];
  readonly handedOut: TaskMessage[] = [];
  /** The most attempts held at once, over all slots. */
  mostHeld = 0;

  constructor(
    slots: number,
    private readonly answer: (msg: TaskMessage) => Answer | null,
  ) {
    this.workers = Array.from({ length: slots }, (_, i) => ({ id: `w${i + 1}`, pid: null, queue: [], tasksRun: 0, ready: true, retiring: false }));
  }

  attach(events: PoolEvents): void {
    this.events = events;
  }
  quiesce(): void {}
  dropQueued(): void {}
  freeSlots(): PoolWorker[] {
    return this.workers.filter((w) => w.queue.length === 0);
  }
  needsWork(): boolean {
    return this.workers.some((w) => w.queue.length === 0);
  }
  hasIdleWorker(): boolean {
    return this.needsWork();
  }
  reportsStarts(): boolean {
    return false;
  }
  dispatch(worker: PoolWorker, tasks: TaskMessage[]): void {
    worker.queue.push(...tasks.map((t) => t.token));
    this.handedOut.push(...tasks);
    this.mostHeld = Math.max(this.mostHeld, this.workers.reduce((n, w) => n + w.queue.length, 0));
    for (const task of tasks) {
      const a = this.answer(task);
      if (a) setImmediate(() => this.end(worker, task, a));
    }
  }
  /** Reports the attempt's end, as its worker would. */
  end(worker: PoolWorker, task: TaskMessage, a: Answer): void {
    worker.queue.splice(worker.queue.indexOf(task.token), 1);
    const error = a.ok ? null : { name: a.retryable ? 'Error' : 'PermanentError', message: `boom ${task.key}`, retryable: a.retryable };
    const msg: DoneMessage = { token: task.token, ok: a.ok, result: a.ok ? 'null' : null, error, exitCode: a.ok ? 0 : 1, signal: null, outputTail: null, logPath: null, durationMs: 1, startedAt: 0 };
    this.events.done(worker, msg);
  }
  abort(): void {}
  interrupt(): void {}
  kill(): void {}
  stuck(): PoolWorker[] {
    return [];
  }
  stopped(): PoolWorker[] {
    return [];
  }
  drop(): void {}
  async shutdown(): Promise<void> {}
  get size(): number {
    return this.workers.length;
  }
  get emptyBecause(): null {
    return null;
  }
}

/** Retries 20 ms apart, exactly (no jitter): a design bound the test can hold the store to. */
const BACKOFF_MS = 20;
const rules: RetryRules = {
  policy: { backoffMs: BACKOFF_MS, factor: 1, maxBackoffMs: BACKOFF_MS, jitter: 0 },
  permanentCodes: [],
  timeoutMs: null,
  permanentErrors: [],
  heartbeatTimeoutMs: null,
};

interface Ended {
  key: string;
  outcome: Outcome;
  status: TaskStatus;
}

describe('the coordinator tick, in-process (fake slots, a real SQLite store)', () => {
  let dir: string;
  let store: TaskStore;

  beforeEach(async () => {
    dir = tempDir('sd-tick-');
    store = await openStore(join(dir, 'store.db'), { create: true });
  });
  afterEach(async () => {
    await store.close();
  });

  async function batchOf(n: number, maxAttempts: number): Promise<BatchRecord> {
    const keys = Array.from({ length: n }, (_, i) => `k${i}`);
    const specs: TaskSpec[] = keys.map((key) => ({ key, payload: { version: 1, path: join(dir, key), rel: key }, fingerprint: `${key}:1` }));
    const job = definitionOf(dir, { ...DEFAULT_SETTINGS, handler: { kind: 'exec', template: 'true' }, retries: maxAttempts - 1 });
    await store.enqueue({ name: 'b', source: dir, job, maxAttempts }, specs);
    return (await store.findBatch('b'))!;
  }

  function coordinator(batch: BatchRecord, pool: FakePool, over: { maxFailures?: number } = {}) {
    const ended: Ended[] = [];
    const observer: RunObserver = {
      attemptEnded: (task, settlement, status) => ended.push({ key: task.key, outcome: settlement.outcome, status }),
      released: () => undefined,
      note: () => undefined,
    };
    const c = new Coordinator(
      store,
      batch,
      pool,
      {
        rules: () => rules,
        leaseMs: 30_000,
        graceMs: 1_000,
        killGraceMs: 100,
        noWait: false,
        maxFailures: over.maxFailures ?? null,
        maxRuntimeMs: null,
        logDir: join(dir, 'logs'),
        pollMs: 50,
        outputs: new DeclaredOutputs(settingsOf(storedDefinition(batch)), batch.name, false, store.identity),
        printPrefix: null,
      },
      observer,
    );
    return { c, ended };
  }

  it('claims for every free slot and no more, commits every success, and ends done', async () => {
    const batch = await batchOf(7, 1);
    const pool = new FakePool(3, () => ({ ok: true }));
    const { c, ended } = coordinator(batch, pool);
    expect(await c.run()).toEqual<StopReason>({ kind: 'done' });
    expect(pool.mostHeld).toBe(3); // every slot filled, none twice
    expect(new Set(pool.handedOut.map((t) => t.key)).size).toBe(7);
    expect(pool.handedOut).toHaveLength(7); // each task claimed once
    expect(ended.map((e) => e.status)).toEqual(Array(7).fill('SUCCESS'));
    const counts = await store.counts(batch.id);
    expect(counts.succeeded).toBe(7);
    for (const t of pool.handedOut) expect((await store.attemptsOf((await store.getTask(batch.id, t.key))!.id)).map((a) => a.outcome)).toEqual(['SUCCESS']);
  });

  it('commits a failure with its retry due after the backoff, and claims it again only then', async () => {
    const batch = await batchOf(2, 3);
    const pool = new FakePool(2, (t) => (t.key === 'k1' && t.attempt === 1 ? { ok: false, retryable: true } : { ok: true }));
    const { c, ended } = coordinator(batch, pool);
    expect(await c.run()).toEqual<StopReason>({ kind: 'done' });
    expect(ended.filter((e) => e.key === 'k1')).toEqual([
      { key: 'k1', outcome: 'FAILED', status: 'PENDING' },
      { key: 'k1', outcome: 'SUCCESS', status: 'SUCCESS' },
    ]);
    const task = (await store.getTask(batch.id, 'k1'))!;
    const [first, second] = await store.attemptsOf(task.id);
    expect([first!.outcome, second!.outcome]).toEqual(['FAILED', 'SUCCESS']);
    // The retry was claimed no sooner than the failure's commit plus the backoff it scheduled.
    expect(second!.startedAt - first!.endedAt!).toBeGreaterThanOrEqual(BACKOFF_MS);
    expect(pool.handedOut.filter((t) => t.key === 'k1').map((t) => t.attempt)).toEqual([1, 2]);
  });

  it('--max-failures: the failure that reaches it stops the claim, and nothing more is handed out', async () => {
    const batch = await batchOf(6, 1);
    const pool = new FakePool(1, () => ({ ok: false, retryable: false }));
    const { c, ended } = coordinator(batch, pool, { maxFailures: 2 });
    expect(await c.run()).toEqual<StopReason>({ kind: 'max-failures' });
    expect(ended.map((e) => e.status)).toEqual(['FAILED', 'FAILED']);
    expect(pool.handedOut).toHaveLength(2);
    const counts = await store.counts(batch.id);
    expect([counts.failed, counts.pending, counts.running]).toEqual([2, 4, 0]);
  });

  it('stop: the running attempt finishes and is committed, nothing more is claimed, the rest stays PENDING', async () => {
    const batch = await batchOf(4, 1);
    let held: { worker: PoolWorker; task: TaskMessage } | null = null;
    const pool = new FakePool(1, () => null); // answered below, after the stop
    const dispatch = pool.dispatch.bind(pool);
    pool.dispatch = (worker, tasks) => {
      dispatch(worker, tasks);
      held = { worker, task: tasks[0]! };
    };
    const { c, ended } = coordinator(batch, pool);
    const done = c.run();
    await expect.poll(() => held).not.toBeNull();
    c.stop({ kind: 'signal', signal: 'SIGTERM' });
    expect(c.running).toBe(1);
    pool.end(held!.worker, held!.task, { ok: true });
    expect(await done).toEqual<StopReason>({ kind: 'signal', signal: 'SIGTERM' });
    expect(pool.handedOut).toHaveLength(1);
    expect(ended).toEqual([{ key: held!.task.key, outcome: 'SUCCESS', status: 'SUCCESS' }]);
    const counts = await store.counts(batch.id);
    expect([counts.succeeded, counts.pending, counts.running]).toEqual([1, 3, 0]);
  });
});
