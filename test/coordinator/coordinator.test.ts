/** The tick in-process: the real coordinator on a real SQLite store, with a pool of fake slots the test answers for. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../src/coordinator/coordinator.js';
import { DeclaredOutputs } from '../../src/coordinator/declared-outputs.js';
import type { RunObserver, RunPool, StopReason } from '../../src/coordinator/run-types.js';
import type { RetryRules } from '../../src/coordinator/settlement.js';
import { DEFAULT_SETTINGS, definitionOf, settingsOf, storedDefinition } from '../../src/job/job-definition.js';
import type { PoolEvents, PoolWorker } from '../../src/pool/pool.js';
import { ownerId } from '../../src/lease-owner.js';
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
  freePlaces(): PoolWorker[] {
    return this.workers.filter((w) => w.queue.length === 0);
  }
  needsWork(): boolean {
    return this.workers.some((w) => w.queue.length === 0);
  }
  hasIdleWorker(): boolean {
    return this.needsWork();
  }
  busyWorkers(): number {
    return 0;
  }
  widen(): void {}
  async grow(): Promise<string | null> {
    return null;
  }
  reportsStarts(): boolean {
    return false;
  }
  readonly groups = { maxItems: () => 1, splits: () => true, claimShape: () => ({ perPlace: 1, dealt: false }) };
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
  whyEmpty(): null {
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
  busyCodes: [75],
  maxBusyMs: 3_600_000,
  retryQuiet: false,
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
    store = await openStore(join(dir, 'store.db'), 'create');
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

  function coordinator(batch: BatchRecord, pool: FakePool, over: { maxFailures?: number; leaseMs?: number; store?: TaskStore } = {}) {
    const ended: Ended[] = [];
    const observer: RunObserver = {
      attemptEnded: (task, settlement, status) => ended.push({ key: task.key, outcome: settlement.outcome, status }),
      released: () => undefined,
      note: () => undefined,
    };
    const c = new Coordinator(
      over.store ?? store,
      batch,
      pool,
      {
        rules: () => rules,
        leaseMs: over.leaseMs ?? 30_000,
        graceMs: 1_000,
        killGraceMs: 100,
        noWait: false,
        maxFailures: over.maxFailures ?? null,
        maxRuntimeMs: null,
        logDir: join(dir, 'logs'),
        pollMs: 50,
        outputs: new DeclaredOutputs(settingsOf(storedDefinition(batch)), batch.name, false, store.identity),
        printPrefix: null,
        rate: null,
        limit: null,
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

  /** The store, with the time of each claim the coordinator makes (a look for work), and how often it counted the batch. */
  function lookingAt(target: TaskStore): { store: TaskStore; looks: number[]; counted: () => number } {
    const looks: number[] = [];
    let counted = 0;
    const proxy = new Proxy(target, {
      get(t, prop) {
        const value = Reflect.get(t, prop, t) as unknown;
        if (typeof value !== 'function') return value;
        if (prop === 'counts') counted++;
        if (prop === 'claim' || prop === 'settleAndClaim') return (...args: unknown[]) => (looks.push(performance.now()), (value as (...a: unknown[]) => unknown).apply(t, args));
        return (value as (...a: unknown[]) => unknown).bind(t);
      },
    });
    return { store: proxy, looks, counted: () => counted };
  }

  /** Claims every PENDING task of the batch for `owner`, its lease an hour long. */
  async function holdAll(batch: BatchRecord, owner: string, n: number) {
    const slots = Array.from({ length: n }, (_, i) => ({ workerId: `x${i}`, pid: null, queued: false }));
    return store.claim({ batchId: batch.id, owner, host: owner.split('/')[0]!, now: Date.now(), leaseMs: 3_600_000, slots });
  }

  const gaps = (at: number[]) => at.slice(1).map((t, i) => t - at[i]!);

  it('idle while another host holds the batch: its looks back off from the poll to a third of the lease, and new work is still claimed', async () => {
    const batch = await batchOf(2, 1);
    const held = await holdAll(batch, 'elsewhere/sim/1:1:1', 2); // a live host elsewhere: its lease runs an hour
    expect(held).toHaveLength(2);
    const { store: seen, looks, counted } = lookingAt(store);
    const pool = new FakePool(1, () => ({ ok: true }));
    // pollMs 50, a lease of 1200 ms: waits of 50, 100, 200, then 400 ms each.
    const { c } = coordinator(batch, pool, { leaseMs: 1200, store: seen });
    const done = c.run();
    await new Promise((r) => setTimeout(r, 1600));
    // Timers never fire early: each wait is at least its design length (load only lengthens them).
    const idle = gaps(looks);
    expect(idle.length).toBeGreaterThanOrEqual(2);
    const design = [50, 100, 200, 400];
    idle.forEach((g, i) => expect(g).toBeGreaterThanOrEqual(design[Math.min(i, 3)]! - 2));
    // A fixed 50 ms poll would have looked about 30 times in that while.
    expect(looks.length).toBeLessThanOrEqual(7);
    // Work that turns up is claimed at the next look, within the backed-off wait.
    await store.enqueue({ name: 'b', source: dir, job: batch.job, maxAttempts: 1 }, [{ key: 'late', payload: { version: 1, path: join(dir, 'late'), rel: 'late' }, fingerprint: 'late:1' }]);
    await expect.poll(() => pool.handedOut.map((t) => t.key), { timeout: 10_000 }).toEqual(['late']);
    // The batch ends elsewhere: the idle coordinator notices at a later look and ends done.
    const end = Date.now();
    expect(await store.settle(held.map((t) => ({ token: t.token, taskId: t.id, outcome: 'SUCCESS', endedAt: end, durationMs: 1, exitCode: 0, signal: null, error: null, result: 'null', outputTail: null, logPath: null })))).toHaveLength(2);
    expect(await done).toEqual<StopReason>({ kind: 'done' });
    // No look counted the batch's tasks (a read of every task's index entry): it asked whether any is left.
    expect(counted()).toBe(0);
  });

  it("idle while another live coordinator on this machine holds the batch: it looks every poll (that one's death is noticed within a poll)", async () => {
    const batch = await batchOf(1, 2); // the LOST attempt counts: one more is left
    const other = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      const held = await holdAll(batch, ownerId(other.pid!), 1);
      expect(held).toHaveLength(1);
      const { store: seen, looks } = lookingAt(store);
      // A lease of 30 s: backing off, waits would grow to 10 s.
      const pool = new FakePool(1, () => ({ ok: true }));
      const { c } = coordinator(batch, pool, { store: seen });
      const done = c.run();
      await expect.poll(() => looks.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(8);
      // Backing off, 8 looks would take over 6 s (50 + 100 + … + 3200 ms); at the poll, 350 ms.
      expect(looks[7]! - looks[0]!).toBeLessThan(5000);
      // It dies: its task is taken back within a poll, run here, and the batch ends.
      other.kill('SIGKILL');
      expect(await done).toEqual<StopReason>({ kind: 'done' });
      expect(pool.handedOut.map((t) => t.key)).toEqual(['k0']);
      expect((await store.getTask(batch.id, 'k0'))!.status).toBe('SUCCESS');
      expect((await store.attemptsOf(held[0]!.id)).map((a) => a.outcome)).toEqual(['LOST', 'SUCCESS']);
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('idle while other hosts move the batch along: it keeps looking every poll, so it sees the end soon', async () => {
    const batch = await batchOf(30, 1);
    const held = await holdAll(batch, 'elsewhere/sim/1:1:1', 30);
    expect(held).toHaveLength(30);
    const { store: seen, looks } = lookingAt(store);
    // A lease of 30 s: standing still, the waits would grow to 10 s (7 looks in the first 3 s).
    const { c } = coordinator(batch, new FakePool(1, () => ({ ok: true })), { store: seen });
    const done = c.run();
    // The other host settles a task every 100 ms: the batch's counts change between looks.
    for (const t of held) {
      await new Promise((r) => setTimeout(r, 100));
      await store.settle([{ token: t.token, taskId: t.id, outcome: 'SUCCESS', endedAt: Date.now(), durationMs: 1, exitCode: 0, signal: null, error: null, result: 'null', outputTail: null, logPath: null }]);
    }
    expect(await done).toEqual<StopReason>({ kind: 'done' });
    // About 60 looks at 50 ms; backing off, at most 8 in those 3 s. (Load only makes gaps longer:
    // 16 looks is an average gap of about 190 ms.)
    expect(looks.length).toBeGreaterThanOrEqual(16);
  });
});
