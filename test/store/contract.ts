import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClaimedTask, NewBatch, Outcome, Settlement, TaskFilter, TaskSpec, TaskStore } from '../../src/store/task-store.js';

/**
 * The TaskStore contract: every backend runs this suite, through the interface only
 * (no SQL, no driver), on a fresh store per test. Times passed to the store are
 * taken after enqueue so a backend may stamp new tasks with "now" as their due time.
 */
export type MakeStore = () => Promise<{ store: TaskStore; cleanup: () => Promise<void> }>;

const HOST = 'contract-host';
const LEASE_MS = 30_000;

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

export function describeTaskStore(name: string, makeStore: MakeStore): void {
  describe(`TaskStore contract: ${name}`, () => {
    let store: TaskStore;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ store, cleanup } = await makeStore());
    });
    afterEach(async () => {
      await cleanup();
    });

    /** Enqueues `n` tasks k000… into a batch and returns its id. */
    async function setup(n: number, opts: { name?: string; maxAttempts?: number } = {}): Promise<number> {
      const r = await store.enqueue(newBatch(opts.name, opts.maxAttempts), keys(n).map(spec));
      return r.batch.id;
    }

    function claim(batchId: number, now: number, opts: { owner?: string; slots?: number; leaseMs?: number } = {}) {
      const slots = Array.from({ length: opts.slots ?? 1 }, (_, i) => ({ workerId: `w${i + 1}`, pid: 1000 + i }));
      return store.claim({ batchId, owner: opts.owner ?? 'owner-A', host: HOST, now, leaseMs: opts.leaseMs ?? LEASE_MS, slots });
    }

    async function claimOne(batchId: number, now: number, opts: { owner?: string; leaseMs?: number } = {}): Promise<ClaimedTask> {
      const got = await claim(batchId, now, { ...opts, slots: 1 });
      expect(got).toHaveLength(1);
      return got[0]!;
    }

    async function task(batchId: number, key: string) {
      const t = await store.getTask(batchId, key);
      expect(t, `task ${key}`).toBeDefined();
      return t!;
    }

    async function countsAddUp(batchId: number) {
      const c = await store.counts(batchId);
      expect(c.pending + c.retrying + c.running + c.succeeded + c.failed + c.cancelled).toBe(c.total);
      return c;
    }

    describe('identity', () => {
      it('is 32 random hex digits, the same on every read, and differs between two stores', async () => {
        expect(store.identity).toMatch(/^[0-9a-f]{32}$/);
        await store.enqueue(newBatch(), keys(2).map(spec));
        expect(store.identity).toBe(store.identity);
        const other = await makeStore();
        try {
          expect(other.store.identity).toMatch(/^[0-9a-f]{32}$/);
          expect(other.store.identity).not.toBe(store.identity);
        } finally {
          await other.cleanup();
        }
      });
    });

    describe('enqueue and batches', () => {
      it('creates the batch and inserts every spec as a PENDING task', async () => {
        const r = await store.enqueue(newBatch('logs', 4), keys(3).map(spec));
        expect(r.created).toBe(true);
        expect(r.inserted).toBe(3);
        expect(r.batch).toMatchObject({ name: 'logs', source: '/data/logs', job: newBatch('logs', 4).job, paused: false });
        expect(typeof r.batch.id).toBe('number');
        for (const key of keys(3)) {
          const t = await task(r.batch.id, key);
          expect(t).toMatchObject({ key, stage: '', status: 'PENDING', attempts: 0, maxAttempts: 4, payload: spec(key).payload });
          expect(t).toMatchObject({ fingerprint: spec(key).fingerprint, leaseOwner: null, result: null, lastError: null });
          expect(t.finishedAt).toBeNull();
        }
        expect(await countsAddUp(r.batch.id)).toEqual({ total: 3, pending: 3, retrying: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 });
      });

      it('inserts nothing when the same specs are enqueued again', async () => {
        const first = await store.enqueue(newBatch(), keys(5).map(spec));
        const again = await store.enqueue(newBatch(), keys(5).map(spec));
        expect(again.created).toBe(false);
        expect(again.inserted).toBe(0);
        expect(again.batch.id).toBe(first.batch.id);
        expect((await store.counts(first.batch.id)).total).toBe(5);
      });

      it('inserts only the keys the batch lacks, leaving existing tasks as they are', async () => {
        const id = await setup(3);
        const running = await claimOne(id, Date.now());
        const more = await store.enqueue(newBatch(), keys(5).map(spec));
        expect(more.inserted).toBe(2);
        expect((await store.counts(id)).total).toBe(5);
        expect(await task(id, running.key)).toMatchObject({ status: 'RUNNING', attempts: 1 });
        expect((await store.listTasks({ batchId: id })).map((t) => t.key)).toEqual(keys(5));
      });

      it('inserts a key repeated within one enqueue once', async () => {
        const r = await store.enqueue(newBatch(), ['a', 'b', 'a'].map(spec));
        expect(r.inserted).toBe(2);
        expect((await store.counts(r.batch.id)).total).toBe(2);
      });

      it('pauses and resumes a batch (setPaused), seen by findBatch and listBatches', async () => {
        const r = await store.enqueue(newBatch('p'), ['a'].map(spec));
        expect(r.batch.paused).toBe(false);
        await store.setPaused(r.batch.id, true);
        expect((await store.findBatch('p'))!.paused).toBe(true);
        expect((await store.listBatches()).find((b) => b.name === 'p')!.paused).toBe(true);
        await store.setPaused(r.batch.id, false);
        expect((await store.findBatch('p'))!.paused).toBe(false);
      });

      it('creates a batch with no tasks from an empty source', async () => {
        const r = await store.enqueue(newBatch('empty'), []);
        expect(r).toMatchObject({ created: true, inserted: 0 });
        expect(await store.findBatch('empty')).toBeDefined();
        expect((await store.counts(r.batch.id)).total).toBe(0);
      });

      it('streams any iterable, many thousands of specs', async () => {
        function* many() {
          for (let i = 0; i < 12_345; i++) yield spec(`f/${String(i).padStart(6, '0')}`);
        }
        const r = await store.enqueue(newBatch(), many());
        expect(r.inserted).toBe(12_345);
        expect((await store.counts(r.batch.id)).pending).toBe(12_345);
        expect(await task(r.batch.id, 'f/012344')).toMatchObject({ status: 'PENDING' });
      });

      it('is all-or-nothing: a source that throws midway leaves no batch and no tasks', async () => {
        function* broken() {
          for (let i = 0; i < 10; i++) yield spec(`x${i}`);
          throw new Error('disk went away while walking');
        }
        await expect(store.enqueue(newBatch('broken'), broken())).rejects.toThrow('disk went away');
        expect(await store.findBatch('broken')).toBeUndefined();
        expect(await store.listBatches()).toEqual([]);
        // The store is still usable and the aborted rows did not leak into the next enqueue.
        const ok = await store.enqueue(newBatch('ok'), ['y'].map(spec));
        expect(ok.inserted).toBe(1);
        expect((await store.listTasks({ batchId: ok.batch.id })).map((t) => t.key)).toEqual(['y']);
      });

      it('is all-or-nothing for an existing batch too', async () => {
        const id = await setup(2);
        function* broken() {
          yield spec('new-1');
          throw new Error('walk failed');
        }
        await expect(store.enqueue(newBatch(), broken())).rejects.toThrow('walk failed');
        expect((await store.listTasks({ batchId: id })).map((t) => t.key)).toEqual(keys(2));
      });

      it('finds batches by name, lists them oldest first and knows the latest', async () => {
        expect(await store.latestBatch()).toBeUndefined();
        expect(await store.listBatches()).toEqual([]);
        const a = await store.enqueue(newBatch('a'), []);
        const b = await store.enqueue(newBatch('b'), []);
        const c = await store.enqueue(newBatch('c'), []);
        expect(await store.findBatch('b')).toEqual(b.batch);
        expect(await store.findBatch('nope')).toBeUndefined();
        expect((await store.latestBatch())?.name).toBe('c');
        expect((await store.listBatches()).map((x) => x.name)).toEqual(['a', 'b', 'c']);
        expect(new Set([a.batch.id, b.batch.id, c.batch.id]).size).toBe(3);
        expect(c.batch.createdAt).toBeGreaterThanOrEqual(a.batch.createdAt);
      });
    });

    describe('claim', () => {
      it('hands out one task per slot in key order, RUNNING, with the attempt counted', async () => {
        const id = await setup(5, { maxAttempts: 4 });
        const now = Date.now();
        const got = await claim(id, now, { owner: 'owner-A', slots: 2, leaseMs: 1000 });
        expect(got.map((t) => t.key)).toEqual(['k000', 'k001']);
        expect(got.map((t) => t.workerId)).toEqual(['w1', 'w2']);
        for (const t of got) {
          expect(t).toMatchObject({ stage: '', attempt: 1, maxAttempts: 4, payload: spec(t.key).payload });
          expect(typeof t.token).toBe('number');
          expect(await task(id, t.key)).toMatchObject({
            status: 'RUNNING',
            attempts: 1,
            leaseOwner: 'owner-A',
            leaseExpiresAt: now + 1000,
            workerId: t.workerId,
            startedAt: now,
          });
        }
        expect(got[0]!.token).not.toBe(got[1]!.token);
        const rest = await claim(id, now, { slots: 5 });
        expect(rest.map((t) => t.key)).toEqual(['k002', 'k003', 'k004']);
        const seqs = [...got, ...rest].map((t) => t.seq);
        expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
        expect(new Set(seqs).size).toBe(5);
        expect(await claim(id, now, { slots: 3 })).toEqual([]);
      });

      it('claims nothing for no slots', async () => {
        const id = await setup(2);
        expect(await store.claim({ batchId: id, owner: 'o', host: HOST, now: Date.now(), leaseMs: LEASE_MS, slots: [] })).toEqual([]);
        expect((await store.counts(id)).pending).toBe(2);
      });

      it('opens an attempt row for the claim', async () => {
        const id = await setup(1);
        const now = Date.now();
        const t = await claimOne(id, now);
        const attempts = await store.attemptsOf(t.id);
        expect(attempts).toHaveLength(1);
        expect(attempts[0]).toMatchObject({ attempt: 1, workerId: 'w1', host: HOST, pid: 1000, startedAt: now, endedAt: null, outcome: null });
      });

      it('never returns a task that is RUNNING', async () => {
        const id = await setup(10);
        const now = Date.now();
        const seen: string[] = [];
        for (let i = 0; i < 15; i++) seen.push(...(await claim(id, now + i, { owner: i % 2 ? 'owner-A' : 'owner-B' })).map((t) => t.key));
        expect(seen).toEqual(keys(10));
        expect((await store.counts(id)).running).toBe(10);
      });

      it('only claims from the batch asked for', async () => {
        const a = await setup(2, { name: 'a' });
        const b = await setup(2, { name: 'b' });
        const got = await claim(b, Date.now(), { slots: 5 });
        expect(got).toHaveLength(2);
        for (const t of got) expect(await task(b, t.key)).toMatchObject({ status: 'RUNNING' });
        expect((await store.counts(a)).pending).toBe(2);
      });

      it('does not claim a task before its next_run_at', async () => {
        const id = await setup(2);
        const now = Date.now();
        const first = await claimOne(id, now);
        expect(await store.settle([ending(first, 'FAILED', now + 10, { retryAt: now + 1000 })])).toEqual([first.token]);
        expect(await task(id, first.key)).toMatchObject({ status: 'PENDING', nextRunAt: now + 1000 });
        // The other task is due; the delayed one is skipped.
        const other = await claimOne(id, now + 20);
        expect(other.key).not.toBe(first.key);
        expect(await claim(id, now + 500)).toEqual([]);
        expect(await claim(id, now + 999)).toEqual([]);
        const again = await claimOne(id, now + 1000);
        expect(again).toMatchObject({ key: first.key, attempt: 2 });
      });

      it('never hands the same task to two owners claiming interleaved, over many rounds', async () => {
        const n = 60;
        const id = await setup(n, { maxAttempts: 3 });
        const t0 = Date.now();
        const held = new Map<number, string>();
        let previous: ClaimedTask[] = [];
        let claims = 0;
        for (let round = 0; round < 400; round++) {
          const now = t0 + round * 10;
          const [a, b] = await Promise.all([
            claim(id, now, { owner: 'owner-A', slots: 3 }),
            claim(id, now, { owner: 'owner-B', slots: 2 }),
          ]);
          for (const [owner, got] of [['owner-A', a], ['owner-B', b]] as const) {
            for (const t of got) {
              expect(held.get(t.id), `task ${t.key} claimed by ${owner} while held by ${held.get(t.id)}`).toBeUndefined();
              held.set(t.id, owner);
            }
          }
          claims += a.length + b.length;
          // Tasks claimed in the previous round are still RUNNING during this round's claims.
          const settlements = previous.map((t) =>
            (t.id + t.attempt) % 3 === 0
              ? ending(t, 'FAILED', now + 5, { retryAt: now + 6 })
              : ending(t, 'SUCCESS', now + 5, { result: JSON.stringify({ round }) }),
          );
          expect((await store.settle(settlements)).sort()).toEqual(settlements.map((s) => s.token).sort());
          for (const t of previous) held.delete(t.id);
          previous = [...a, ...b];
          if (previous.length === 0 && (await store.nextDueAt(id)) === null) break;
        }
        const c = await countsAddUp(id);
        expect(c.succeeded + c.failed).toBe(n);
        expect(claims).toBeGreaterThan(n);
        // No two attempts of one task ever overlapped.
        for (const t of await store.listTasks({ batchId: id })) {
          const attempts = await store.attemptsOf(t.id);
          expect(attempts.map((x) => x.attempt)).toEqual(attempts.map((_, i) => i + 1));
          for (let i = 1; i < attempts.length; i++) expect(attempts[i]!.startedAt).toBeGreaterThanOrEqual(attempts[i - 1]!.endedAt!);
        }
      });
    });

    describe('settle', () => {
      it('SUCCESS stores the result and closes the attempt', async () => {
        const id = await setup(2);
        const now = Date.now();
        const t = await claimOne(id, now);
        const s = ending(t, 'SUCCESS', now + 250, { durationMs: 250, result: '{"lines":42}', outputTail: 'done\n' });
        expect(await store.settle([s])).toEqual([t.token]);
        const row = await task(id, t.key);
        expect(row).toMatchObject({ status: 'SUCCESS', result: '{"lines":42}', finishedAt: now + 250, attempts: 1, leaseOwner: null, leaseExpiresAt: null });
        const [a] = await store.attemptsOf(t.id);
        expect(a).toMatchObject({
          attempt: 1,
          outcome: 'SUCCESS',
          endedAt: now + 250,
          durationMs: 250,
          exitCode: 0,
          signal: null,
          error: null,
          outputTail: 'done\n',
          logPath: `/logs/${t.key}.log`,
        });
        expect(await countsAddUp(id)).toMatchObject({ succeeded: 1, pending: 1, running: 0 });
      });

      it('commits nothing for an empty list', async () => {
        expect(await store.settle([])).toEqual([]);
      });

      it('ignores a second settlement of the same attempt', async () => {
        const id = await setup(1);
        const now = Date.now();
        const t = await claimOne(id, now);
        expect(await store.settle([ending(t, 'SUCCESS', now + 1, { result: '1' })])).toEqual([t.token]);
        expect(await store.settle([ending(t, 'FAILED', now + 2, { retryAt: now + 3 })])).toEqual([]);
        expect(await task(id, t.key)).toMatchObject({ status: 'SUCCESS', result: '1', attempts: 1 });
        expect((await store.attemptsOf(t.id))[0]).toMatchObject({ outcome: 'SUCCESS', endedAt: now + 1 });
      });

      it('fences off a stale token once the task was released and claimed again', async () => {
        const id = await setup(1);
        const now = Date.now();
        const stale = await claimOne(id, now, { owner: 'owner-A', leaseMs: 1000 });
        expect(await store.releaseStale(id, now + 2000, [], 'owner-B')).toHaveLength(1);
        const fresh = await claimOne(id, now + 2000, { owner: 'owner-B' });
        expect(fresh.token).not.toBe(stale.token);
        expect(fresh.attempt).toBe(2);

        const applied = await store.settle([
          ending(stale, 'SUCCESS', now + 2100, { result: '"stale"' }),
          ending(stale, 'FAILED', now + 2100, { retryAt: null }),
        ]);
        expect(applied).toEqual([]);
        expect(await task(id, stale.key)).toMatchObject({ status: 'RUNNING', leaseOwner: 'owner-B', result: null, attempts: 2 });
        const attempts = await store.attemptsOf(stale.id);
        expect(attempts.map((a) => a.outcome)).toEqual(['LOST', null]);

        expect(await store.settle([ending(fresh, 'SUCCESS', now + 2200, { result: '"fresh"' })])).toEqual([fresh.token]);
        expect(await task(id, stale.key)).toMatchObject({ status: 'SUCCESS', result: '"fresh"' });
        expect((await store.attemptsOf(stale.id)).map((a) => a.outcome)).toEqual(['LOST', 'SUCCESS']);
      });

      it('a LOST attempt ends unknown (NULL), never at the takeover time; its late fenced report fills in its real end once, outcome LOST', async () => {
        const id = await setup(1);
        const now = Date.now();
        const stale = await claimOne(id, now, { owner: 'owner-A', leaseMs: 1000 });
        await store.releaseStale(id, now + 2000, [], 'owner-B');
        const fresh = await claimOne(id, now + 2000, { owner: 'owner-B' });
        const [lost] = await store.attemptsOf(stale.id);
        expect(lost).toMatchObject({ outcome: 'LOST', endedAt: null, durationMs: null, exitCode: null, signal: null });
        expect(lost!.error).toMatch(/^LOST: the lease of owner-A expired/);

        // The frozen owner resumes: its command had ended at now + 1500 (before the takeover, unseen).
        const late = ending(stale, 'CRASHED', now + 1500, { durationMs: 1500, exitCode: null, signal: 'SIGKILL', error: 'CRASHED: worker killed by SIGKILL', retryAt: now + 1600 });
        expect(await store.settle([late])).toEqual([]);
        const [filled, running] = await store.attemptsOf(stale.id);
        expect(filled).toMatchObject({ outcome: 'LOST', endedAt: now + 1500, durationMs: 1500, signal: 'SIGKILL', logPath: `/logs/${stale.key}.log` });
        expect(filled!.error).toBe(`${lost!.error}; its owner reported later, fenced off: CRASHED: worker killed by SIGKILL`);
        expect(running).toMatchObject({ outcome: null, endedAt: null });
        expect(await task(id, stale.key)).toMatchObject({ status: 'RUNNING', leaseOwner: 'owner-B', attempts: 2 });

        // Once only: a second late report changes nothing; the fresh attempt settles as usual.
        expect(await store.settle([ending(stale, 'SUCCESS', now + 9000, { result: '"stale"' })])).toEqual([]);
        expect((await store.attemptsOf(stale.id))[0]).toEqual(filled);
        expect(await store.settle([ending(fresh, 'SUCCESS', now + 2200, { result: '"fresh"' })])).toEqual([fresh.token]);
        expect((await store.attemptsOf(stale.id)).map((a) => [a.outcome, a.endedAt])).toEqual([
          ['LOST', now + 1500],
          ['SUCCESS', now + 2200],
        ]);
      });

      it('a late fenced success (grouped with others) fills in the LOST end too', async () => {
        const id = await setup(2);
        const now = Date.now();
        const [stale, other] = await claim(id, now, { owner: 'owner-A', slots: 2, leaseMs: 1000 });
        await store.releaseStale(id, now + 2000, [], 'owner-B');
        // Both lost; the first reports a success later, alone in a group of successes.
        expect(await store.settle([ending(stale!, 'SUCCESS', now + 2500, { result: '"late"', durationMs: 2500 })])).toEqual([]);
        const [a] = await store.attemptsOf(stale!.id);
        expect(a).toMatchObject({ outcome: 'LOST', endedAt: now + 2500, durationMs: 2500, exitCode: 0 });
        expect(a!.error).toMatch(/; its owner reported later, fenced off: SUCCESS \(result discarded\)$/);
        expect(await task(id, stale!.key)).toMatchObject({ status: 'PENDING', result: null });
        expect((await store.attemptsOf(other!.id))[0]).toMatchObject({ outcome: 'LOST', endedAt: null });
      });

      it('fences off a token whose task was released but not claimed again', async () => {
        const id = await setup(1);
        const now = Date.now();
        const stale = await claimOne(id, now, { leaseMs: 10 });
        await store.releaseStale(id, now + 100, [], 'someone-else');
        expect(await store.settle([ending(stale, 'SUCCESS', now + 200, { result: '1' })])).toEqual([]);
        expect(await task(id, stale.key)).toMatchObject({ status: 'PENDING', result: null, attempts: 1 });
      });

      it('returns only the tokens that still held their task', async () => {
        const id = await setup(3);
        const now = Date.now();
        const [a, b, c] = await claim(id, now, { owner: 'owner-A', slots: 3, leaseMs: 1000 });
        await store.heartbeat('owner-A', now + 10_000);
        await store.settle([ending(b!, 'SUCCESS', now + 1)]);
        const applied = await store.settle([
          ending(a!, 'SUCCESS', now + 2),
          ending(b!, 'SUCCESS', now + 2),
          ending(c!, 'FAILED', now + 2, { retryAt: now + 100 }),
        ]);
        expect(applied.sort()).toEqual([a!.token, c!.token].sort());
      });

      it('commits a group of successes row by row: each its own result and attempt fields, stale ones fenced', async () => {
        const id = await setup(4);
        const now = Date.now();
        const [a, b, c, d] = await claim(id, now, { owner: 'owner-A', slots: 4, leaseMs: 1000 });
        const attemptOf = async (t: ClaimedTask) => (await store.attemptsOf(t.id))[0];
        expect((await Promise.all([a, b, c, d].map((t) => attemptOf(t!)))).map((x) => [x!.workerId, x!.pid])).toEqual([
          ['w1', 1000],
          ['w2', 1001],
          ['w3', 1002],
          ['w4', 1003],
        ]);
        // c goes back unstarted and owner-B claims it again: owner-A's success for c must not land.
        await store.settle([ending(c!, 'INTERRUPTED', now + 1)]);
        const again = await claimOne(id, now + 2, { owner: 'owner-B' });
        expect(again.key).toBe(c!.key);
        const weird = '"quote \\" ü 😀 \\n tab\\t"';
        const applied = await store.settle([
          ending(a!, 'SUCCESS', now + 10, { result: weird, durationMs: 3, outputTail: 'a out', startedAt: now + 5 }),
          ending(b!, 'SUCCESS', now + 11, { result: null, exitCode: 0, outputTail: null, logPath: null }),
          ending(c!, 'SUCCESS', now + 12, { result: '"stale"' }),
          ending(d!, 'SUCCESS', now + 13, { result: JSON.stringify('x'.repeat(100_000)) }),
        ]);
        expect(applied.sort()).toEqual([a!.token, b!.token, d!.token].sort());
        expect(await task(id, a!.key)).toMatchObject({ status: 'SUCCESS', result: weird, finishedAt: now + 10 });
        expect(await task(id, b!.key)).toMatchObject({ status: 'SUCCESS', result: null, finishedAt: now + 11 });
        expect(await task(id, c!.key)).toMatchObject({ status: 'RUNNING', leaseOwner: 'owner-B', result: null });
        expect((await task(id, d!.key)).result).toHaveLength(100_002);
        expect(await attemptOf(a!)).toMatchObject({ outcome: 'SUCCESS', startedAt: now + 5, endedAt: now + 10, durationMs: 3, outputTail: 'a out' });
        expect(await attemptOf(b!)).toMatchObject({ outcome: 'SUCCESS', startedAt: now, endedAt: now + 11, outputTail: null, logPath: null });
        expect((await store.attemptsOf(c!.id)).map((x) => [x.outcome, x.workerId])).toEqual([
          ['INTERRUPTED', 'w3'],
          [null, 'w1'],
        ]);
      });

      it('a task listed twice in one group: only the settlement whose token holds it lands', async () => {
        const id = await setup(1);
        const now = Date.now();
        const stale = await claimOne(id, now, { owner: 'owner-A', leaseMs: 1000 });
        await store.releaseStale(id, now + 2000, [], 'owner-B');
        const fresh = await claimOne(id, now + 2000, { owner: 'owner-B' });
        const applied = await store.settle([
          ending(fresh, 'SUCCESS', now + 2100, { result: '"fresh"' }),
          ending(stale, 'SUCCESS', now + 2100, { result: '"stale"' }),
        ]);
        expect(applied).toEqual([fresh.token]);
        expect(await task(id, fresh.key)).toMatchObject({ status: 'SUCCESS', result: '"fresh"' });
        expect((await store.attemptsOf(fresh.id)).map((a) => a.outcome)).toEqual(['LOST', 'SUCCESS']);
      });

      it('settleAndClaim commits the finished attempts, then claims for the free slots', async () => {
        const id = await setup(3, { maxAttempts: 3 });
        const now = Date.now();
        const [a, b] = await claim(id, now, { slots: 2 });
        const slots = [1, 2, 3].map((i) => ({ workerId: `w${i}`, pid: i }));
        const request = (at: number) => ({ batchId: id, owner: 'owner-A', host: HOST, now: at, leaseMs: LEASE_MS, slots });
        const tick = await store.settleAndClaim(
          [ending(a!, 'SUCCESS', now + 1, { result: '"a"' }), ending(b!, 'FAILED', now + 1, { retryAt: now + 2 })],
          request(now + 2),
        );
        expect(tick.applied.sort()).toEqual([a!.token, b!.token].sort());
        // The task that just failed is due again and claimed in the same tick, after the fresh one.
        expect(tick.claimed.map((t) => [t.key, t.attempt, t.workerId])).toEqual([
          ['k002', 1, 'w1'],
          [b!.key, 2, 'w2'],
        ]);
        expect(await task(id, a!.key)).toMatchObject({ status: 'SUCCESS', result: '"a"' });
        expect((await store.attemptsOf(b!.id)).map((x) => x.outcome)).toEqual(['FAILED', null]);

        // A stale settlement is fenced off; the claim still happens; nothing to do is nothing.
        const again = await store.settleAndClaim([ending(a!, 'FAILED', now + 3, { retryAt: null })], request(now + 3));
        expect(again).toEqual({ applied: [], claimed: [] });
        expect(await task(id, a!.key)).toMatchObject({ status: 'SUCCESS' });
        expect(await store.settleAndClaim([], { ...request(now + 3), slots: [] })).toEqual({ applied: [], claimed: [] });
        const last = await store.settleAndClaim(tick.claimed.map((t) => ending(t, 'SUCCESS', now + 4)), { ...request(now + 4), slots: [] });
        expect(last.applied.sort()).toEqual(tick.claimed.map((t) => t.token).sort());
        expect(last.claimed).toEqual([]);
        expect(await countsAddUp(id)).toMatchObject({ succeeded: 3, running: 0 });
      });
    });

    describe('retries', () => {
      it('a retryable failure goes back to PENDING until the attempts run out, then FAILED', async () => {
        const id = await setup(1, { maxAttempts: 3 });
        const now = Date.now();
        for (let attempt = 1; attempt <= 3; attempt++) {
          const at = now + attempt * 100;
          const t = await claimOne(id, at);
          expect(t.attempt).toBe(attempt);
          const s = ending(t, 'FAILED', at + 10, { error: `ENOENT: try ${attempt}`, exitCode: 2, retryAt: at + 50 });
          expect(await store.settle([s])).toEqual([t.token]);
          const row = await task(id, t.key);
          if (attempt < 3) {
            expect(row).toMatchObject({ status: 'PENDING', attempts: attempt, nextRunAt: at + 50, lastError: `ENOENT: try ${attempt}`, finishedAt: null });
            expect(await countsAddUp(id)).toMatchObject({ retrying: 1, pending: 0, failed: 0 });
          } else {
            expect(row).toMatchObject({ status: 'FAILED', attempts: 3, lastError: 'ENOENT: try 3', finishedAt: at + 10 });
            expect(await countsAddUp(id)).toMatchObject({ retrying: 0, failed: 1 });
          }
        }
        expect(await claim(id, now + 10_000)).toEqual([]);
        const attempts = await store.attemptsOf((await task(id, 'k000')).id);
        expect(attempts.map((a) => [a.attempt, a.outcome, a.exitCode])).toEqual([
          [1, 'FAILED', 2],
          [2, 'FAILED', 2],
          [3, 'FAILED', 2],
        ]);
      });

      it('a failure with retryAt null fails the task at once', async () => {
        const id = await setup(1, { maxAttempts: 5 });
        const now = Date.now();
        const t = await claimOne(id, now);
        await store.settle([ending(t, 'FAILED', now + 1, { error: 'PermanentError: bad input', retryAt: null })]);
        expect(await task(id, t.key)).toMatchObject({ status: 'FAILED', attempts: 1, lastError: 'PermanentError: bad input', finishedAt: now + 1 });
        expect(await countsAddUp(id)).toMatchObject({ failed: 1, retrying: 0, pending: 0 });
      });

      it('TIMEOUT and CRASHED are retried like any failure and recorded as such', async () => {
        const id = await setup(1, { maxAttempts: 3 });
        const now = Date.now();
        const a = await claimOne(id, now);
        await store.settle([ending(a, 'TIMEOUT', now + 1, { exitCode: null, signal: 'SIGKILL', retryAt: now + 2 })]);
        const b = await claimOne(id, now + 2);
        await store.settle([ending(b, 'CRASHED', now + 3, { exitCode: null, signal: 'SIGSEGV', retryAt: now + 4 })]);
        expect(await task(id, a.key)).toMatchObject({ status: 'PENDING', attempts: 2 });
        const attempts = await store.attemptsOf(a.id);
        expect(attempts.map((x) => [x.outcome, x.signal])).toEqual([
          ['TIMEOUT', 'SIGKILL'],
          ['CRASHED', 'SIGSEGV'],
        ]);
      });

      it('INTERRUPTED returns the task to PENDING without charging the attempt', async () => {
        const id = await setup(1, { maxAttempts: 1 });
        const now = Date.now();
        for (let i = 0; i < 3; i++) {
          const t = await claimOne(id, now + i * 10);
          expect(t.attempt).toBe(1);
          const s = ending(t, 'INTERRUPTED', now + i * 10 + 5, { error: 'INTERRUPTED: stopped by a signal; not counted' });
          expect(await store.settle([s])).toEqual([t.token]);
          expect(await task(id, t.key)).toMatchObject({ status: 'PENDING', attempts: 0, leaseOwner: null });
          expect(await countsAddUp(id)).toMatchObject({ pending: 1, retrying: 0, running: 0 });
        }
        const attempts = await store.attemptsOf((await task(id, 'k000')).id);
        expect(attempts.map((a) => a.outcome)).toEqual(['INTERRUPTED', 'INTERRUPTED', 'INTERRUPTED']);
        // Still the whole budget left: the next real failure fails the task (maxAttempts 1).
        const t = await claimOne(id, now + 100);
        await store.settle([ending(t, 'FAILED', now + 101, { retryAt: now + 200 })]);
        expect(await task(id, t.key)).toMatchObject({ status: 'FAILED', attempts: 1 });
      });

      it('INTERRUPTED keeps the attempts charged before it', async () => {
        const id = await setup(1, { maxAttempts: 3 });
        const now = Date.now();
        const a = await claimOne(id, now);
        await store.settle([ending(a, 'FAILED', now + 1, { retryAt: now + 2 })]);
        const b = await claimOne(id, now + 2);
        await store.settle([ending(b, 'INTERRUPTED', now + 3)]);
        expect(await task(id, a.key)).toMatchObject({ status: 'PENDING', attempts: 1 });
        expect(await countsAddUp(id)).toMatchObject({ retrying: 1 });
      });
    });

    describe('releaseStale and heartbeat', () => {
      it('returns a task whose lease expired to PENDING and records the attempt LOST', async () => {
        const id = await setup(2);
        const now = Date.now();
        const t = await claimOne(id, now, { owner: 'owner-A', leaseMs: 1000 });
        expect(await store.releaseStale(id, now + 500, [], 'owner-B')).toEqual([]);
        const released = await store.releaseStale(id, now + 1500, [], 'owner-B');
        expect(released).toEqual([{ key: t.key, owner: 'owner-A', failed: false }]);
        expect(await task(id, t.key)).toMatchObject({ status: 'PENDING', attempts: 1, leaseOwner: null });
        const [a] = await store.attemptsOf(t.id);
        expect(a).toMatchObject({ outcome: 'LOST', endedAt: null, durationMs: null });
        expect(await countsAddUp(id)).toMatchObject({ retrying: 1, pending: 1, running: 0 });
        // Released work is claimable at once and the lost attempt stays counted.
        const all = await claim(id, now + 1500, { slots: 2 });
        expect(all.find((x) => x.key === t.key)?.attempt).toBe(2);
      });

      it('releases the tasks of a dead owner even when their lease is fresh', async () => {
        const id = await setup(3);
        const now = Date.now();
        const dead = await claim(id, now, { owner: 'host:1:dead', slots: 2 });
        const alive = await claimOne(id, now, { owner: 'host:2:alive' });
        const released = await store.releaseStale(id, now + 1, ['host:1:dead'], 'host:3:self');
        expect(released.map((r) => r.key).sort()).toEqual(dead.map((t) => t.key).sort());
        expect(released.every((r) => r.owner === 'host:1:dead' && !r.failed)).toBe(true);
        for (const t of dead) expect((await store.attemptsOf(t.id))[0]).toMatchObject({ outcome: 'LOST' });
        expect(await task(id, alive.key)).toMatchObject({ status: 'RUNNING', leaseOwner: 'host:2:alive' });
        expect(await store.runningOwners(id)).toEqual(['host:2:alive']);
      });

      it("never releases the caller's own tasks", async () => {
        const id = await setup(2);
        const now = Date.now();
        const mine = await claim(id, now, { owner: 'me', slots: 2, leaseMs: 10 });
        expect(await store.releaseStale(id, now + 60_000, ['me'], 'me')).toEqual([]);
        expect(await store.releaseStale(null, now + 60_000, ['me'], 'me')).toEqual([]);
        for (const t of mine) expect(await task(id, t.key)).toMatchObject({ status: 'RUNNING', leaseOwner: 'me' });
      });

      it('fails a released task that has no attempts left', async () => {
        const id = await setup(1, { maxAttempts: 1 });
        const now = Date.now();
        const t = await claimOne(id, now, { owner: 'owner-A', leaseMs: 10 });
        expect(await store.releaseStale(id, now + 100, [], 'owner-B')).toEqual([{ key: t.key, owner: 'owner-A', failed: true }]);
        const row = await task(id, t.key);
        expect(row).toMatchObject({ status: 'FAILED', attempts: 1 });
        expect(row.finishedAt).not.toBeNull();
        expect(row.lastError).toBeTruthy();
        expect((await store.attemptsOf(t.id))[0]).toMatchObject({ outcome: 'LOST' });
        expect(await countsAddUp(id)).toMatchObject({ failed: 1, running: 0 });
        expect(await claim(id, now + 1000)).toEqual([]);
      });

      it('releases within one batch, or every batch for null', async () => {
        const a = await setup(1, { name: 'a' });
        const b = await setup(1, { name: 'b' });
        const now = Date.now();
        await claimOne(a, now, { owner: 'o', leaseMs: 10 });
        await claimOne(b, now, { owner: 'o', leaseMs: 10 });
        expect(await store.runningOwners(null)).toEqual(['o']);
        expect(await store.releaseStale(a, now + 100, [], 'self')).toHaveLength(1);
        expect((await store.counts(b)).running).toBe(1);
        expect(await store.releaseStale(null, now + 100, [], 'self')).toHaveLength(1);
        expect((await store.counts(b)).running).toBe(0);
        expect(await store.runningOwners(null)).toEqual([]);
      });

      it('lists the distinct owners holding RUNNING tasks', async () => {
        const a = await setup(4, { name: 'a' });
        const b = await setup(1, { name: 'b' });
        const now = Date.now();
        expect(await store.runningOwners(a)).toEqual([]);
        await claim(a, now, { owner: 'o1', slots: 2 });
        await claim(a, now, { owner: 'o2', slots: 1 });
        await claim(b, now, { owner: 'o3', slots: 1 });
        expect((await store.runningOwners(a)).sort()).toEqual(['o1', 'o2']);
        expect((await store.runningOwners(null)).sort()).toEqual(['o1', 'o2', 'o3']);
      });

      it("heartbeat extends the owner's leases so recovery leaves them alone", async () => {
        const id = await setup(3);
        const now = Date.now();
        const mine = await claim(id, now, { owner: 'owner-A', slots: 2, leaseMs: 1000 });
        const theirs = await claimOne(id, now, { owner: 'owner-C', leaseMs: 1000 });
        await store.heartbeat('owner-A', now + 5000);
        for (const t of mine) expect(await task(id, t.key)).toMatchObject({ leaseExpiresAt: now + 5000 });
        expect(await task(id, theirs.key)).toMatchObject({ leaseExpiresAt: now + 1000 });
        const released = await store.releaseStale(id, now + 3000, [], 'owner-B');
        expect(released.map((r) => r.key)).toEqual([theirs.key]);
        expect(await store.releaseStale(id, now + 4999, [], 'owner-B')).toEqual([]);
        expect((await store.releaseStale(id, now + 6000, [], 'owner-B')).map((r) => r.key).sort()).toEqual(mine.map((t) => t.key).sort());
      });
    });

    describe('reports', () => {
      /** One task in every state: fresh, retrying, running, succeeded, failed, interrupted (fresh again). */
      async function mixed(): Promise<{ id: number; now: number }> {
        const id = await setup(6, { maxAttempts: 3 });
        const now = Date.now();
        const [, retrying, running, succeeded, failed, interrupted] = keys(6);
        const ts = await claim(id, now, { slots: 6 });
        const by = (k: string) => ts.find((t) => t.key === k)!;
        await store.settle([
          ending(by(retrying!), 'FAILED', now + 1, { error: 'EIO: retry me', retryAt: now + 5000 }),
          ending(by(succeeded!), 'SUCCESS', now + 2, { result: '"ok"' }),
          ending(by(failed!), 'FAILED', now + 3, { error: 'ENOENT: no such file', retryAt: null }),
          ending(by(interrupted!), 'INTERRUPTED', now + 4),
          ending(by('k000'), 'INTERRUPTED', now + 4),
        ]);
        expect(await task(id, running!)).toMatchObject({ status: 'RUNNING' });
        return { id, now };
      }

      it('counts are disjoint and add up to the total', async () => {
        const { id } = await mixed();
        expect(await countsAddUp(id)).toEqual({ total: 6, pending: 2, retrying: 1, running: 1, succeeded: 1, failed: 1, cancelled: 0 });
      });

      it('nextDueAt is the earliest due time of a PENDING task, or null', async () => {
        const id = await setup(2);
        expect(await store.nextDueAt(id)).toBeLessThanOrEqual(Date.now());
        const now = Date.now();
        const [a, b] = await claim(id, now, { slots: 2 });
        expect(await store.nextDueAt(id)).toBeNull();
        await store.settle([ending(a!, 'FAILED', now + 1, { retryAt: now + 900 }), ending(b!, 'FAILED', now + 1, { retryAt: now + 300 })]);
        expect(await store.nextDueAt(id)).toBe(now + 300);
        const c = await claimOne(id, now + 300);
        await store.settle([ending(c, 'SUCCESS', now + 301)]);
        expect(await store.nextDueAt(id)).toBe(now + 900);
        const d = await claimOne(id, now + 900);
        await store.settle([ending(d, 'SUCCESS', now + 901)]);
        expect(await store.nextDueAt(id)).toBeNull();
      });

      it('topErrors groups the errors of FAILED tasks, most frequent first, with an example key', async () => {
        const id = await setup(7, { maxAttempts: 3 });
        const now = Date.now();
        const ts = await claim(id, now, { slots: 7 });
        const errors = ['E1: a', 'E2: b', 'E1: a', 'E3: c', 'E1: a', 'E2: b'];
        await store.settle([
          ...errors.map((error, i) => ending(ts[i]!, 'FAILED', now + 1, { error, retryAt: null })),
          ending(ts[6]!, 'FAILED', now + 1, { error: 'E9: still retrying', retryAt: now + 10 }),
        ]);
        const top = await store.topErrors(id, 10);
        expect(top.map((e) => [e.error, e.count])).toEqual([
          ['E1: a', 3],
          ['E2: b', 2],
          ['E3: c', 1],
        ]);
        for (const e of top) expect(ts.filter((t, i) => errors[i] === e.error).map((t) => t.key)).toContain(e.example);
        expect((await store.topErrors(id, 2)).map((e) => e.error)).toEqual(['E1: a', 'E2: b']);
        expect(await store.topErrors(await setup(1, { name: 'clean' }), 10)).toEqual([]);
      });

      it('listTasks filters by status, key, error text, attempted and limit, in key order', async () => {
        const { id } = await mixed();
        const list = async (f: Omit<Parameters<TaskStore['listTasks']>[0], 'batchId'>) =>
          (await store.listTasks({ batchId: id, ...f })).map((t) => t.key);
        expect(await list({})).toEqual(keys(6));
        expect(await list({ status: 'PENDING' })).toEqual(['k000', 'k001', 'k005']);
        expect(await list({ status: 'PENDING', attemptedOnly: true })).toEqual(['k001']);
        expect(await list({ attemptedOnly: true })).toEqual(['k001', 'k002', 'k003', 'k004']);
        expect(await list({ status: 'FAILED' })).toEqual(['k004']);
        expect(await list({ status: 'CANCELLED' })).toEqual([]);
        expect(await list({ errorContains: 'no such file' })).toEqual(['k004']);
        expect(await list({ errorContains: 'EIO' })).toEqual(['k001']);
        expect(await list({ errorContains: 'nothing like this' })).toEqual([]);
        expect(await list({ keyMatches: (k) => k >= 'k003' })).toEqual(['k003', 'k004', 'k005']);
        expect(await list({ keyMatches: (k) => k !== 'k000', limit: 2 })).toEqual(['k001', 'k002']);
        expect(await list({ limit: 100 })).toEqual(keys(6));
        const [row] = await store.listTasks({ batchId: id, status: 'SUCCESS' });
        expect(row).toMatchObject({ key: 'k003', status: 'SUCCESS', result: '"ok"', attempts: 1, payload: spec('k003').payload });
      });

      it('getTask finds a task by key within its batch only', async () => {
        const a = await setup(1, { name: 'a' });
        const b = await store.enqueue(newBatch('b'), ['other'].map(spec));
        expect(await store.getTask(a, 'k000')).toMatchObject({ key: 'k000' });
        expect(await store.getTask(a, 'missing')).toBeUndefined();
        expect(await store.getTask(b.batch.id, 'k000')).toBeUndefined();
      });

      it('attemptsOf lists every attempt oldest first', async () => {
        const id = await setup(1, { maxAttempts: 5 });
        const now = Date.now();
        const outcomes: Outcome[] = ['FAILED', 'TIMEOUT', 'CRASHED', 'SUCCESS'];
        let taskId = 0;
        for (const [i, outcome] of outcomes.entries()) {
          const t = await claimOne(id, now + i * 100);
          taskId = t.id;
          await store.settle([ending(t, outcome, now + i * 100 + 50, { retryAt: now + i * 100 + 60 })]);
        }
        const attempts = await store.attemptsOf(taskId);
        expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4]);
        expect(attempts.map((a) => a.outcome)).toEqual(outcomes);
        expect(attempts.map((a) => a.startedAt)).toEqual([0, 1, 2, 3].map((i) => now + i * 100));
        expect(attempts.map((a) => a.endedAt)).toEqual([0, 1, 2, 3].map((i) => now + i * 100 + 50));
        expect(await store.attemptsOf(999_999)).toEqual([]);
      });

      it('activity spans the first start and the last finish', async () => {
        const id = await setup(2);
        expect(await store.activity(id)).toEqual({ firstStartedAt: null, lastFinishedAt: null });
        const now = Date.now();
        const a = await claimOne(id, now);
        const b = await claimOne(id, now + 10);
        await store.settle([ending(b, 'SUCCESS', now + 20), ending(a, 'SUCCESS', now + 30)]);
        expect(await store.activity(id)).toEqual({ firstStartedAt: now, lastFinishedAt: now + 30 });
      });
    });

    describe('retryFailed and updateJob', () => {
      it('retryFailed resets only matching FAILED tasks, with a fresh budget and the history kept', async () => {
        const id = await setup(5, { maxAttempts: 2 });
        const other = await setup(1, { name: 'other', maxAttempts: 1 });
        const now = Date.now();
        const ts = await claim(id, now, { slots: 5 });
        const o = await claimOne(other, now);
        await store.settle([
          ending(ts[0]!, 'FAILED', now + 1, { error: 'ENOENT: gone', retryAt: null }),
          ending(ts[1]!, 'FAILED', now + 1, { error: 'EACCES: denied', retryAt: null }),
          ending(ts[2]!, 'FAILED', now + 1, { error: 'ENOENT: gone', retryAt: null }),
          ending(ts[3]!, 'FAILED', now + 1, { error: 'ENOENT: retrying', retryAt: now + 10 }),
          ending(ts[4]!, 'SUCCESS', now + 1),
          ending(o, 'FAILED', now + 1, { error: 'ENOENT: gone', retryAt: null }),
        ]);

        expect(await store.retryFailed({ batchId: id, errorContains: 'ENOENT', keyMatches: (k) => k !== 'k002' })).toBe(1);
        expect(await task(id, 'k000')).toMatchObject({ status: 'PENDING', attempts: 0, maxAttempts: 2, finishedAt: null });
        expect(await task(id, 'k001')).toMatchObject({ status: 'FAILED', attempts: 1 });
        expect(await task(id, 'k002')).toMatchObject({ status: 'FAILED', attempts: 1 });
        expect(await task(id, 'k003')).toMatchObject({ status: 'PENDING', attempts: 1 });
        expect(await task(id, 'k004')).toMatchObject({ status: 'SUCCESS' });
        expect(await task(other, o.key)).toMatchObject({ status: 'FAILED' });
        expect(await countsAddUp(id)).toMatchObject({ pending: 1, retrying: 1, failed: 2, succeeded: 1 });
        expect((await store.attemptsOf(ts[0]!.id)).map((a) => a.outcome)).toEqual(['FAILED']);

        // A reset task is claimable at once and gets its whole budget again.
        const again = await claimOne(id, now + 2);
        expect(again).toMatchObject({ key: 'k000', attempt: 1 });
        await store.settle([ending(again, 'FAILED', now + 3, { retryAt: now + 3 })]);
        expect(await task(id, 'k000')).toMatchObject({ status: 'PENDING', attempts: 1 });
        expect((await store.attemptsOf(ts[0]!.id)).map((a) => a.attempt)).toEqual([1, 1]);

        expect(await store.retryFailed({ batchId: id })).toBe(2);
        expect(await store.retryFailed({ batchId: id })).toBe(0);
        expect(await countsAddUp(id)).toMatchObject({ failed: 0, pending: 2 });
      });

      it('retryFailed ignores a status in the filter: only FAILED tasks are reset', async () => {
        const id = await setup(2);
        const now = Date.now();
        const [a, b] = await claim(id, now, { slots: 2 });
        await store.settle([ending(a!, 'SUCCESS', now + 1), ending(b!, 'FAILED', now + 1, { retryAt: null })]);
        expect(await store.retryFailed({ batchId: id, status: 'SUCCESS' })).toBe(1);
        expect(await task(id, a!.key)).toMatchObject({ status: 'SUCCESS' });
        expect(await task(id, b!.key)).toMatchObject({ status: 'PENDING', attempts: 0 });
      });

      it('updateJob replaces the job and the budget of unfinished tasks only', async () => {
        const id = await setup(4, { maxAttempts: 1 });
        const now = Date.now();
        const [done, failed, running] = await claim(id, now, { slots: 3 });
        await store.settle([ending(done!, 'SUCCESS', now + 1), ending(failed!, 'FAILED', now + 1, { retryAt: null })]);
        const job = { version: 1, handler: { exec: 'gzip {}' }, retries: 4 };
        await store.updateJob(id, job, 5);
        expect((await store.findBatch('batch'))?.job).toEqual(job);
        expect(await task(id, done!.key)).toMatchObject({ status: 'SUCCESS', maxAttempts: 1 });
        expect(await task(id, failed!.key)).toMatchObject({ status: 'FAILED', maxAttempts: 1 });
        expect(await task(id, running!.key)).toMatchObject({ status: 'RUNNING', maxAttempts: 5 });
        expect(await task(id, 'k003')).toMatchObject({ status: 'PENDING', maxAttempts: 5 });
        // The running attempt now has retries left under the new budget.
        await store.settle([ending(running!, 'FAILED', now + 2, { retryAt: now + 3 })]);
        expect(await task(id, running!.key)).toMatchObject({ status: 'PENDING', attempts: 1 });
        expect(await claimOne(id, now + 3)).toMatchObject({ maxAttempts: 5 });
      });

      it('updateJob bumps the job version; a claim under another version claims nothing; each attempt records its version', async () => {
        const id = await setup(3);
        const now = Date.now();
        expect((await store.findBatch('batch'))?.jobVersion).toBe(1);
        const request = (jobVersion: number | undefined, at: number) => ({ batchId: id, owner: 'owner-A', host: HOST, now: at, leaseMs: LEASE_MS, slots: [{ workerId: 'w1', pid: 1 }], jobVersion });
        const [first] = await store.claim(request(1, now));
        expect(await store.updateJob(id, { version: 1, handler: { exec: 'B {}' } }, 3)).toBe(2);
        expect((await store.findBatch('batch'))?.jobVersion).toBe(2);
        // A coordinator still running the first definition's handler starts nothing more, in either verb.
        expect(await store.claim(request(1, now + 1))).toEqual([]);
        expect((await store.settleAndClaim([ending(first!, 'SUCCESS', now + 1)], request(1, now + 1))).claimed).toEqual([]);
        expect(await task(id, first!.key)).toMatchObject({ status: 'SUCCESS' }); // its result still lands
        const [second] = await store.claim(request(2, now + 2));
        const [third] = await store.claim(request(undefined, now + 3)); // no version asked: the stored one
        expect((await store.attemptsOf(first!.id)).map((a) => a.jobVersion)).toEqual([1]);
        expect((await store.attemptsOf(second!.id)).map((a) => a.jobVersion)).toEqual([2]);
        expect((await store.attemptsOf(third!.id)).map((a) => a.jobVersion)).toEqual([2]);
        expect(await store.counts(id)).toMatchObject({ running: 2, succeeded: 1, pending: 0 });
      });
    });

    describe('statuses, changed inputs, history and prune', () => {
      /** `spec(key)` whose file now shows another size:mtime. */
      const changedSpec = (key: string) => ({ ...spec(key), fingerprint: `${key.length + 100}:1800000000000` });

      it('statuses reads the current status of the given tasks, skipping unknown ids', async () => {
        const id = await setup(4);
        const now = Date.now();
        const [a, b, c] = await claim(id, now, { slots: 3 });
        await store.settle([ending(a!, 'SUCCESS', now + 1), ending(b!, 'FAILED', now + 1, { retryAt: null })]);
        const pending = await task(id, 'k003');
        const got = await store.statuses([a!.id, b!.id, c!.id, pending.id, 999_999]);
        expect([...got.entries()].sort((x, y) => x[0] - y[0])).toEqual(
          [
            [a!.id, 'SUCCESS'],
            [b!.id, 'FAILED'],
            [c!.id, 'RUNNING'],
            [pending.id, 'PENDING'],
          ].sort((x, y) => (x[0] as number) - (y[0] as number)),
        );
        expect((await store.statuses([])).size).toBe(0);
        // A retryable failure is PENDING again: the store, not the claim, says whether the task ended.
        await store.settle([ending(c!, 'FAILED', now + 2, { retryAt: now + 10 })]);
        expect((await store.statuses([c!.id])).get(c!.id)).toBe('PENDING');
      });

      it('notes succeeded tasks whose file changed, and re-queues them only with rerunChanged', async () => {
        const first = await store.enqueue(newBatch(), keys(3).map(spec));
        expect(first).toMatchObject({ changed: 0, requeued: 0 });
        const id = first.batch.id;
        const now = Date.now();
        const [a, b] = await claim(id, now, { slots: 2 });
        await store.settle([ending(a!, 'SUCCESS', now + 1, { result: '"a"' }), ending(b!, 'SUCCESS', now + 1, { result: '"b"' })]);
        expect(await store.changedCount(id)).toBe(0);

        // k000 (succeeded) and k002 (never ran) changed; k001 did not.
        const specs = () => [changedSpec('k000'), spec('k001'), changedSpec('k002')];
        const seen = await store.enqueue(newBatch(), specs());
        expect(seen).toMatchObject({ created: false, inserted: 0, changed: 1, requeued: 0 });
        expect(await store.changedCount(id)).toBe(1);
        expect(await task(id, 'k000')).toMatchObject({ status: 'SUCCESS', result: '"a"', fingerprint: spec('k000').fingerprint });
        // An unfinished task will run on the file as it is now.
        expect(await task(id, 'k002')).toMatchObject({ status: 'PENDING', fingerprint: changedSpec('k002').fingerprint });
        expect(await store.enqueue(newBatch(), specs())).toMatchObject({ changed: 1, requeued: 0 });

        const rerun = await store.enqueue(newBatch(), specs(), { rerunChanged: true });
        expect(rerun).toMatchObject({ inserted: 0, changed: 0, requeued: 1 });
        expect(await task(id, 'k000')).toMatchObject({
          status: 'PENDING',
          attempts: 0,
          result: null,
          finishedAt: null,
          fingerprint: changedSpec('k000').fingerprint,
        });
        expect(await task(id, 'k001')).toMatchObject({ status: 'SUCCESS', result: '"b"' });
        expect(await store.changedCount(id)).toBe(0);
        expect(await countsAddUp(id)).toMatchObject({ pending: 2, succeeded: 1 });
        expect((await claim(id, now + 10, { slots: 3 })).map((t) => [t.key, t.attempt])).toEqual([
          ['k000', 1],
          ['k002', 1],
        ]);
      });

      it('forgets a change when the file is back as it was when the task succeeded', async () => {
        const id = await setup(1);
        const now = Date.now();
        await store.settle([ending(await claimOne(id, now), 'SUCCESS', now + 1)]);
        expect((await store.enqueue(newBatch(), [changedSpec('k000')])).changed).toBe(1);
        expect((await store.enqueue(newBatch(), [spec('k000')])).changed).toBe(0);
        expect(await store.changedCount(id)).toBe(0);
        expect((await store.enqueue(newBatch(), [spec('k000')], { rerunChanged: true })).requeued).toBe(0);
        expect(await task(id, 'k000')).toMatchObject({ status: 'SUCCESS' });
      });

      it('batchAttempts lists the batch attempts oldest first with their keys, the most recent when cut', async () => {
        const id = await setup(2, { maxAttempts: 5 });
        const other = await setup(1, { name: 'other' });
        const now = Date.now();
        const tokens: number[] = [];
        for (let i = 0; i < 3; i++) {
          const ts = await claim(id, now + i * 10, { slots: 2 });
          tokens.push(...ts.map((t) => t.token));
          await store.settle(ts.map((t) => ending(t, 'FAILED', now + i * 10 + 5, { retryAt: now + i * 10 + 10 })));
        }
        await claimOne(other, now);
        const all = await store.batchAttempts(id, 100);
        expect(all.total).toBe(6);
        expect(all.attempts.map((a) => a.id)).toEqual(tokens);
        expect(all.attempts.map((a) => a.key)).toEqual(['k000', 'k001', 'k000', 'k001', 'k000', 'k001']);
        expect(all.attempts.map((a) => a.attempt)).toEqual([1, 1, 2, 2, 3, 3]);
        expect(all.attempts[0]).toMatchObject({ outcome: 'FAILED', endedAt: now + 5, host: HOST, workerId: 'w1' });
        const cut = await store.batchAttempts(id, 2);
        expect(cut).toMatchObject({ total: 6 });
        expect(cut.attempts.map((a) => a.id)).toEqual(tokens.slice(-2));
        expect(await store.batchAttempts(await setup(1, { name: 'idle' }), 10)).toEqual({ attempts: [], total: 0 });
        // recentAttempts: the same rows, without the count; a newer batch's attempts are not among them.
        expect(await store.recentAttempts(id, 100)).toEqual(all.attempts);
        expect(await store.recentAttempts(id, 2)).toEqual(cut.attempts);
        expect(await store.recentAttempts(other, 10)).toHaveLength(1);
      });

      it('historySize counts the attempts of every batch', async () => {
        expect(await store.historySize()).toBe(0);
        const a = await setup(2, { name: 'a' });
        const b = await setup(1, { name: 'b' });
        const now = Date.now();
        await claim(a, now, { slots: 2 });
        const t = await claimOne(b, now);
        await store.settle([ending(t, 'INTERRUPTED', now + 1)]);
        await claimOne(b, now + 2);
        expect(await store.historySize()).toBe(4);
      });

      it('pruneFinished deletes idle finished batches with their tasks and attempts, and nothing else', async () => {
        const now = Date.now();
        const done = await setup(3, { name: 'done', maxAttempts: 1 });
        const [ok, bad, lost] = await claim(done, now, { slots: 3, leaseMs: 10 });
        await store.settle([ending(ok!, 'SUCCESS', now + 1), ending(bad!, 'FAILED', now + 2, { retryAt: null })]);
        await store.releaseStale(done, now + 100, [], 'self');
        const busy = await setup(2, { name: 'busy' });
        await store.settle([ending(await claimOne(busy, now), 'SUCCESS', now + 1)]);
        const running = await setup(1, { name: 'running' });
        await claimOne(running, now, { leaseMs: 10 });
        const recent = await setup(1, { name: 'recent' });
        await store.settle([ending(await claimOne(recent, now), 'SUCCESS', now + 3_600_000)]);
        await store.enqueue(newBatch('empty'), []);
        const history = await store.historySize();

        const before = Date.now() + 60_000;
        const result = await store.pruneFinished(before);
        expect([...result.batches].sort()).toEqual(['done', 'empty']);
        expect(result).toMatchObject({ tasks: 3, attempts: 3 });
        expect([...result.logPaths].sort()).toEqual([`/logs/${ok!.key}.log`, `/logs/${bad!.key}.log`]);
        expect(lost).toBeDefined();
        expect(await store.findBatch('done')).toBeUndefined();
        expect(await store.getTask(done, 'k000')).toBeUndefined();
        expect(await store.attemptsOf(ok!.id)).toEqual([]);
        expect((await store.listBatches()).map((b) => b.name)).toEqual(['busy', 'running', 'recent']);
        expect(await store.historySize()).toBe(history - 3);
        expect((await store.counts(busy)).total).toBe(2);
        expect(await store.pruneFinished(before)).toEqual({ batches: [], tasks: 0, attempts: 0, logPaths: [] });
        // Once its last finish is old enough, the recent batch goes too.
        expect((await store.pruneFinished(now + 3_600_001)).batches).toEqual(['recent']);
      });

      it('pruneFinished deletes a batch bigger than one chunk whole, handing each chunk\'s log paths over as it goes', async () => {
        const now = Date.now();
        const big = await setup(4500, { name: 'big', maxAttempts: 1 });
        const ts = await claim(big, now, { slots: 3 });
        await store.settle(ts.map((t, i) => ending(t, 'SUCCESS', now + 1 + i)));
        await store.cancel({ batchId: big });
        const chunks: [string, string[]][] = [];
        const result = await store.pruneFinished(Date.now() + 60_000, (batch, paths) => chunks.push([batch, paths]));
        expect(result).toEqual({ batches: ['big'], tasks: 4500, attempts: 3, logPaths: [] });
        expect(chunks.flatMap(([, paths]) => paths).sort()).toEqual(ts.map((t) => `/logs/${t.key}.log`).sort());
        expect(chunks.every(([batch]) => batch === 'big')).toBe(true);
        expect(await store.findBatch('big')).toBeUndefined();
        expect(await store.historySize()).toBe(0);
      });

      it("listTasks order 'slowest': finished tasks, longest last attempt first, ties in key order", async () => {
        const id = await setup(5, { maxAttempts: 2 });
        const now = Date.now();
        const ts = await claim(id, now, { slots: 5 });
        const by = (k: string) => ts.find((t) => t.key === k)!;
        await store.settle([
          ending(by('k000'), 'SUCCESS', now + 30),
          ending(by('k001'), 'FAILED', now + 50, { retryAt: null }),
          ending(by('k002'), 'SUCCESS', now + 30),
          ending(by('k003'), 'FAILED', now + 90, { retryAt: now + 100 }),
        ]);
        // k003 is waiting to retry and k004 still runs: neither has finished.
        const slowest = async (f: Omit<TaskFilter, 'batchId' | 'order'> = {}) =>
          (await store.listTasks({ batchId: id, order: 'slowest', ...f })).map((t) => t.key);
        expect(await slowest()).toEqual(['k001', 'k000', 'k002']);
        expect(await slowest({ limit: 2 })).toEqual(['k001', 'k000']);
        expect(await slowest({ status: 'SUCCESS' })).toEqual(['k000', 'k002']);
        expect(await slowest({ keyMatches: (k) => k !== 'k001', limit: 1 })).toEqual(['k000']);
        // The retried task's duration is that of its last attempt.
        const again = await claimOne(id, now + 100);
        expect(again.key).toBe('k003');
        await store.settle([ending(again, 'SUCCESS', now + 101)]);
        expect(await slowest()).toEqual(['k001', 'k000', 'k002', 'k003']);
      });

      it('listTasks and retryFailed match errors with errorMatches, null for no error', async () => {
        const id = await setup(4, { maxAttempts: 1 });
        const now = Date.now();
        const [a, b, c] = await claim(id, now, { slots: 3 });
        await store.settle([
          ending(a!, 'FAILED', now + 1, { error: 'ENOENT: /data/a missing', retryAt: null }),
          ending(b!, 'FAILED', now + 1, { error: 'ENOENT: /data/b missing', retryAt: null }),
          ending(c!, 'FAILED', now + 1, { error: null, retryAt: null }),
        ]);
        const signature = (e: string | null) => e !== null && /^ENOENT: \S+ missing$/.test(e);
        const list = async (f: Omit<TaskFilter, 'batchId'>) => (await store.listTasks({ batchId: id, ...f })).map((t) => t.key);
        expect(await list({ errorMatches: signature })).toEqual(['k000', 'k001']);
        expect(await list({ errorMatches: (e) => e === null })).toEqual(['k002', 'k003']);
        expect(await list({ errorMatches: (e) => e === null, status: 'FAILED' })).toEqual(['k002']);
        expect(await list({ errorMatches: signature, limit: 1 })).toEqual(['k000']);
        expect(await store.topErrors(id, 10)).toEqual([
          { error: '(no error recorded)', count: 1, example: 'k002' },
          { error: 'ENOENT: /data/a missing', count: 1, example: 'k000' },
          { error: 'ENOENT: /data/b missing', count: 1, example: 'k001' },
        ]);
        expect(await store.retryFailed({ batchId: id, errorMatches: signature, keyMatches: (k) => k !== 'k001' })).toBe(1);
        expect(await task(id, 'k000')).toMatchObject({ status: 'PENDING', attempts: 0 });
        expect(await task(id, 'k001')).toMatchObject({ status: 'FAILED' });
        expect(await store.retryFailed({ batchId: id, limit: 0 })).toBe(0);
        expect(await store.retryFailed({ batchId: id, errorMatches: (e) => e === null })).toBe(1);
        expect(await task(id, 'k002')).toMatchObject({ status: 'PENDING', attempts: 0 });
      });
    });

    describe('stages and cancel', () => {
      /** Items a, b, …: per item transcode → (thumb, pkg), keys `stage/item`, thumb with 1 attempt. */
      async function pipeline(items: string[], maxAttempts = 2): Promise<number> {
        const stages: [string, string[], number][] = [
          ['transcode', [], maxAttempts],
          ['thumb', ['transcode'], 1],
          ['pkg', ['transcode'], maxAttempts],
        ];
        const specs = items.flatMap((item) =>
          stages.map(([stage, needs, budget]) => ({ ...spec(item), key: `${stage}/${item}`, stage, item, needs, maxAttempts: budget })),
        );
        return (await store.enqueue(newBatch('staged', maxAttempts), specs)).batch.id;
      }

      it('stores stage, item, needs and each stage its own budget; getTask finds stage keys', async () => {
        const id = await pipeline(['a']);
        expect(await task(id, 'thumb/a')).toMatchObject({ stage: 'thumb', item: 'a', needs: ['transcode'], maxAttempts: 1, status: 'PENDING' });
        expect(await task(id, 'transcode/a')).toMatchObject({ stage: 'transcode', item: 'a', needs: [], maxAttempts: 2 });
        expect(await store.getTask(id, 'a')).toBeUndefined();
      });

      it('claims a stage task only once all its needs succeeded for the same item, and hands it their results', async () => {
        const id = await pipeline(['a', 'b']);
        const now = Date.now();
        const first = await claim(id, now, { slots: 4 });
        expect(first.map((t) => t.key)).toEqual(['transcode/a', 'transcode/b']); // the dependents are not claimable
        expect(await claim(id, now, { slots: 2 })).toEqual([]);
        expect(await store.nextDueAt(id)).toBeNull(); // nothing is due while the needs run
        await store.settle([ending(first[0]!, 'SUCCESS', now + 1, { result: JSON.stringify({ out: 'a.ts' }) })]);
        const next = await claim(id, now + 2, { slots: 4 });
        expect(next.map((t) => t.key).sort()).toEqual(['pkg/a', 'thumb/a']); // only item a's
        expect(next.every((t) => JSON.stringify(t.inputs) === JSON.stringify({ transcode: { out: 'a.ts' } }))).toBe(true);
        const c = await store.stageCounts(id);
        expect(c.map((x) => [x.stage, x.total, x.succeeded, x.running, x.pending])).toEqual([
          ['pkg', 2, 0, 1, 1],
          ['thumb', 2, 0, 1, 1],
          ['transcode', 2, 1, 1, 0],
        ]);
      });

      it("a need that fails terminally cancels its item's dependents (transitively) with the reason; a retry does not", async () => {
        const id = await pipeline(['a', 'b']);
        const now = Date.now();
        const [ta, tb] = await claim(id, now, { slots: 2 });
        await store.settle([ending(ta!, 'FAILED', now + 1, { retryAt: now + 5 })]); // attempt 1 of 2: retried
        expect(await task(id, 'thumb/a')).toMatchObject({ status: 'PENDING' });
        await store.settle([ending(tb!, 'FAILED', now + 1, { retryAt: null })]); // permanent
        for (const key of ['thumb/b', 'pkg/b']) {
          expect(await task(id, key)).toMatchObject({ status: 'CANCELLED', lastError: 'needs transcode: FAILED', attempts: 0 });
        }
        expect(await task(id, 'thumb/a')).toMatchObject({ status: 'PENDING' });
        expect(await countsAddUp(id)).toMatchObject({ failed: 1, cancelled: 2, retrying: 1, pending: 2 });

        // retry-failed on the failed stage brings its dependents back; they wait for it again
        expect(await store.retryFailed({ batchId: id, keyMatches: (k) => k === 'transcode/b' })).toBe(1);
        for (const key of ['transcode/b', 'thumb/b', 'pkg/b']) expect(await task(id, key)).toMatchObject({ status: 'PENDING', lastError: null });
        const again = await claim(id, now + 10, { slots: 4 });
        expect(again.map((t) => t.key).sort()).toEqual(['transcode/a', 'transcode/b']);
      });

      it('a lost need (its coordinator died, budget spent) cancels the dependents too', async () => {
        const id = await pipeline(['a'], 1);
        const now = Date.now();
        const t = await claimOne(id, now, { owner: 'dead-owner' });
        const released = await store.releaseStale(id, now + 1, ['dead-owner'], 'me');
        expect(released).toEqual([{ key: t.key, owner: 'dead-owner', failed: true }]);
        expect(await task(id, 'pkg/a')).toMatchObject({ status: 'CANCELLED', lastError: 'needs transcode: FAILED' });
      });

      it('cancel ends matching PENDING tasks now and their dependents; RUNNING ones end CANCELLED unless they succeed', async () => {
        const id = await pipeline(['a', 'b', 'c']);
        const now = Date.now();
        const [ta, tb] = await claim(id, now, { slots: 2 });
        const r = await store.cancel({ batchId: id, keyMatches: (k) => k.startsWith('transcode/') });
        expect(r).toEqual({ cancelled: 1, stopping: 2, dependents: 2 }); // c now (and its 2 dependents); a, b run on
        expect(await task(id, 'transcode/c')).toMatchObject({ status: 'CANCELLED', lastError: 'cancelled' });
        expect(await task(id, 'thumb/c')).toMatchObject({ status: 'CANCELLED', lastError: 'needs transcode: CANCELLED' });
        // a fails with retries left: CANCELLED, not retried, and its dependents go with it; b succeeds
        await store.settle([ending(ta!, 'FAILED', now + 1, { retryAt: now + 2 }), ending(tb!, 'SUCCESS', now + 1)]);
        expect(await task(id, 'transcode/a')).toMatchObject({ status: 'CANCELLED', attempts: 1 });
        expect((await task(id, 'transcode/a')).lastError).toMatch(/^cancelled; its last attempt: FAILED: boom/);
        expect(await task(id, 'pkg/a')).toMatchObject({ status: 'CANCELLED', lastError: 'needs transcode: CANCELLED' });
        expect(await task(id, 'transcode/b')).toMatchObject({ status: 'SUCCESS' });
        expect((await claim(id, now + 3, { slots: 4 })).map((t) => t.key).sort()).toEqual(['pkg/b', 'thumb/b']);
        expect(await store.cancel({ batchId: id })).toEqual({ cancelled: 0, stopping: 2, dependents: 0 });
        expect(await countsAddUp(id)).toMatchObject({ running: 2, succeeded: 1, cancelled: 6 });
      });

      it('retry-failed on a task whose need is itself FAILED cancels it at once instead of leaving it unclaimable', async () => {
        const id = await pipeline(['a'], 1);
        const now = Date.now();
        await store.settle([ending(await claimOne(id, now), 'SUCCESS', now + 1)]); // transcode/a
        const [thumb, pkg] = await claim(id, now + 2, { slots: 2 });
        await store.settle([ending(thumb!, 'FAILED', now + 3, { retryAt: null }), ending(pkg!, 'SUCCESS', now + 3)]);
        // The input changed: transcode/a runs again and now fails for good; thumb/a stays FAILED.
        const changed = ['transcode', 'thumb', 'pkg'].map((stage) => ({ ...spec('a'), fingerprint: 'other', key: `${stage}/a`, stage, item: 'a', needs: stage === 'transcode' ? [] : ['transcode'], maxAttempts: 1 }));
        await store.enqueue(newBatch('staged', 1), changed, { rerunChanged: true });
        const again = await claimOne(id, now + 4);
        expect(again.key).toBe('transcode/a');
        await store.settle([ending(again, 'FAILED', now + 5, { retryAt: null })]);
        expect(await task(id, 'pkg/a')).toMatchObject({ status: 'CANCELLED', lastError: 'needs transcode: FAILED' });
        expect(await store.retryFailed({ batchId: id, keyMatches: (k) => k === 'thumb/a' })).toBe(1);
        expect(await task(id, 'thumb/a')).toMatchObject({ status: 'CANCELLED', lastError: 'needs transcode: FAILED' });
        expect(await countsAddUp(id)).toMatchObject({ pending: 0, running: 0, failed: 1, cancelled: 2 });
      });

      it('cancel without stages: an interrupted attempt of a cancelled task ends CANCELLED; retry-failed leaves cancelled tasks alone', async () => {
        const id = await setup(3);
        const now = Date.now();
        const t = await claimOne(id, now);
        expect(await store.cancel({ batchId: id, keyMatches: (k) => k !== 'k002' })).toEqual({ cancelled: 1, stopping: 1, dependents: 0 });
        await store.settle([ending(t, 'INTERRUPTED', now + 1)]);
        expect(await task(id, 'k000')).toMatchObject({ status: 'CANCELLED', attempts: 0 });
        expect(await store.retryFailed({ batchId: id })).toBe(0);
        expect((await claim(id, now + 2, { slots: 3 })).map((x) => x.key)).toEqual(['k002']);
        expect(await countsAddUp(id)).toMatchObject({ cancelled: 2, running: 1 });
      });
    });
  });
}
