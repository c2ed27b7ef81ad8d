import { afterEach, beforeEach, expect } from 'vitest';
import type { ClaimedTask, NewBatch, Outcome, Settlement, TaskSpec, TaskStore } from '../../../src/store/task-store.js';

/**
 * What every part of the TaskStore contract shares: the fixtures (specs, batches, settlements)
 * and a fresh store per test with the helpers the tests claim and look with. Every backend
 * runs the parts through the interface only (no SQL, no driver). Times passed to the store
 * are taken after enqueue so a backend may stamp new tasks with "now" as their due time.
 */
export type MakeStore = () => Promise<{ store: TaskStore; cleanup: () => Promise<void> }>;

export const HOST = 'contract-host';
export const LEASE_MS = 30_000;

export function spec(key: string): TaskSpec {
  return { key, payload: { version: 1, path: `/data/src/${key}`, rel: key }, fingerprint: `${key.length}:1700000000000` };
}

/** `n` keys that sort the way they are inserted: k000, k001, … */
export function keys(n: number, prefix = 'k'): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(3, '0')}`);
}

export function newBatch(name = 'batch', maxAttempts = 3): NewBatch {
  return { name, source: `/data/${name}`, job: { version: 1, handler: { exec: 'true' }, retries: maxAttempts - 1 }, maxAttempts };
}

/** The settlement a coordinator would commit for `task`; failures pass `retryAt` explicitly. */
export function ending(task: ClaimedTask, outcome: Outcome, endedAt: number, extra: Partial<Settlement> = {}): Settlement {
  const ok = outcome === 'SUCCESS';
  return {
    token: task.token,
    taskId: task.id,
    outcome,
    endedAt,
    durationMs: 7,
    exitCode: ok ? 0 : 1,
    signal: null,
    error: ok ? null : `${outcome}: boom`,
    outputTail: `output of ${task.key}`,
    logPath: `/logs/${task.key}.log`,
    ...extra,
  };
}

/** The current test's store and the helpers over it (each reads the store when called). */
export interface Harness {
  readonly store: TaskStore;
  makeStore: MakeStore;
  /** Enqueues `n` tasks k000… into a batch and returns its id. */
  setup(n: number, opts?: { name?: string; maxAttempts?: number }): Promise<number>;
  claim(batchId: number, now: number, opts?: { owner?: string; slots?: number; leaseMs?: number }): Promise<ClaimedTask[]>;
  claimOne(batchId: number, now: number, opts?: { owner?: string; leaseMs?: number }): Promise<ClaimedTask>;
  task(batchId: number, key: string): ReturnType<typeof getTask>;
  /** The counts, checked to add up to the total. */
  countsAddUp(batchId: number): ReturnType<TaskStore['counts']>;
}

async function getTask(store: TaskStore, batchId: number, key: string) {
  const t = await store.getTask(batchId, key);
  expect(t, `task ${key}`).toBeDefined();
  return t!;
}

/** Opens a fresh store before each test (closed after it) and returns the helpers over it. */
export function useStore(makeStore: MakeStore): Harness {
  let store: TaskStore;
  let cleanup: () => Promise<void>;
  beforeEach(async () => {
    ({ store, cleanup } = await makeStore());
  });
  afterEach(async () => {
    await cleanup();
  });

  const claim: Harness['claim'] = (batchId, now, opts = {}) => {
    const slots = Array.from({ length: opts.slots ?? 1 }, (_, i) => ({ workerId: `w${i + 1}`, pid: 1000 + i }));
    return store.claim({ batchId, owner: opts.owner ?? 'owner-A', host: HOST, now, leaseMs: opts.leaseMs ?? LEASE_MS, slots });
  };
  return {
    get store() {
      return store;
    },
    makeStore,
    setup: async (n, opts = {}) => (await store.enqueue(newBatch(opts.name, opts.maxAttempts), keys(n).map(spec))).batch.id,
    claim,
    claimOne: async (batchId, now, opts = {}) => {
      const got = await claim(batchId, now, { ...opts, slots: 1 });
      expect(got).toHaveLength(1);
      return got[0]!;
    },
    task: (batchId, key) => getTask(store, batchId, key),
    countsAddUp: async (batchId) => {
      const c = await store.counts(batchId);
      expect(c.pending + c.retrying + c.running + c.queued + c.succeeded + c.failed + c.cancelled).toBe(c.total);
      return c;
    },
  };
}
