import { describe, expect, it } from 'vitest';
import type { Outcome, TaskFilter, TaskStore } from '../../../src/store/task-store.js';
import { HOST, spec, keys, newBatch, ending, type Harness } from './harness.js';

/** The TaskStore contract, queries: counts, listing, attempts, activity. */
export function listContract(h: Harness): void {
  const { setup, claim, claimOne, task, countsAddUp } = h;
  describe('reports', () => {
    /** One task in every state: fresh, retrying, running, succeeded, failed, interrupted (fresh again). */
    async function mixed(): Promise<{ id: number; now: number }> {
      const id = await setup(6, { maxAttempts: 3 });
      const now = Date.now();
      const [, retrying, running, succeeded, failed, interrupted] = keys(6);
      const ts = await claim(id, now, { slots: 6 });
      const by = (k: string) => ts.find((t) => t.key === k)!;
      await h.store.settle([
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
      expect(await countsAddUp(id)).toEqual({ total: 6, pending: 2, retrying: 1, running: 1, queued: 0, succeeded: 1, failed: 1, cancelled: 0 });
    });

    it('nextDueAt is the earliest due time of a PENDING task, or null', async () => {
      const id = await setup(2);
      expect(await h.store.nextDueAt(id)).toBeLessThanOrEqual(Date.now());
      const now = Date.now();
      const [a, b] = await claim(id, now, { slots: 2 });
      expect(await h.store.nextDueAt(id)).toBeNull();
      await h.store.settle([ending(a!, 'FAILED', now + 1, { retryAt: now + 900 }), ending(b!, 'FAILED', now + 1, { retryAt: now + 300 })]);
      expect(await h.store.nextDueAt(id)).toBe(now + 300);
      const c = await claimOne(id, now + 300);
      await h.store.settle([ending(c, 'SUCCESS', now + 301)]);
      expect(await h.store.nextDueAt(id)).toBe(now + 900);
      const d = await claimOne(id, now + 900);
      await h.store.settle([ending(d, 'SUCCESS', now + 901)]);
      expect(await h.store.nextDueAt(id)).toBeNull();
    });

    it('lastRetryDueAt is the latest due time of a task waiting for a retry, or null', async () => {
      const id = await setup(3);
      const now = Date.now();
      expect(await h.store.lastRetryDueAt(id)).toBeNull();
      const [a, b, c] = await claim(id, now, { slots: 3 });
      expect(await h.store.lastRetryDueAt(id)).toBeNull();
      await h.store.settle([ending(a!, 'FAILED', now + 1, { retryAt: now + 900 }), ending(b!, 'FAILED', now + 1, { retryAt: now + 300 }), ending(c!, 'SUCCESS', now + 1)]);
      expect(await h.store.lastRetryDueAt(id)).toBe(now + 900);
      const d = await claimOne(id, now + 300);
      await h.store.settle([ending(d, 'SUCCESS', now + 301)]);
      expect(await h.store.lastRetryDueAt(id)).toBe(now + 900);
      const e = await claimOne(id, now + 900);
      await h.store.settle([ending(e, 'SUCCESS', now + 901)]);
      expect(await h.store.lastRetryDueAt(id)).toBeNull();
    });

    it('recentAttempts name the coordinator that made each attempt', async () => {
      const id = await setup(2);
      const now = Date.now();
      const a = await claimOne(id, now, { owner: 'owner-A' });
      const b = await claimOne(id, now, { owner: 'owner-B' });
      await h.store.settle([ending(a, 'SUCCESS', now + 1), ending(b, 'SUCCESS', now + 2)]);
      expect((await h.store.recentAttempts(id, 10)).map((x) => [x.key, x.owner])).toEqual([
        [a.key, 'owner-A'],
        [b.key, 'owner-B'],
      ]);
    });

    it('progress: unfinished while a task is PENDING (retrying too) or RUNNING, and the time of the last committed outcome', async () => {
      const id = await setup(2, { maxAttempts: 2 });
      expect(await h.store.progress(id)).toEqual({ unfinished: true, lastFinishedAt: null });
      const now = Date.now();
      const [a, b] = await claim(id, now, { slots: 2 });
      expect(await h.store.progress(id)).toEqual({ unfinished: true, lastFinishedAt: null }); // RUNNING
      await h.store.settle([ending(a!, 'SUCCESS', now + 5), ending(b!, 'FAILED', now + 7, { retryAt: now + 900 })]);
      expect(await h.store.progress(id)).toEqual({ unfinished: true, lastFinishedAt: now + 7 }); // b retrying
      const c = await claimOne(id, now + 900);
      await h.store.settle([ending(c, 'SUCCESS', now + 950)]);
      expect(await h.store.progress(id)).toEqual({ unfinished: false, lastFinishedAt: now + 950 });
      // Another batch's tasks are not this one's.
      const other = await setup(1, { name: 'other' });
      expect(await h.store.progress(other)).toEqual({ unfinished: true, lastFinishedAt: null });
      expect(await h.store.progress(id)).toEqual({ unfinished: false, lastFinishedAt: now + 950 });
    });

    it('topErrors groups the errors of FAILED tasks, most frequent first, with an example key', async () => {
      const id = await setup(7, { maxAttempts: 3 });
      const now = Date.now();
      const ts = await claim(id, now, { slots: 7 });
      const errors = ['E1: a', 'E2: b', 'E1: a', 'E3: c', 'E1: a', 'E2: b'];
      await h.store.settle([
        ...errors.map((error, i) => ending(ts[i]!, 'FAILED', now + 1, { error, retryAt: null })),
        ending(ts[6]!, 'FAILED', now + 1, { error: 'E9: still retrying', retryAt: now + 10 }),
      ]);
      const top = await h.store.topErrors(id, 10);
      expect(top.map((e) => [e.error, e.count])).toEqual([
        ['E1: a', 3],
        ['E2: b', 2],
        ['E3: c', 1],
      ]);
      for (const e of top) expect(ts.filter((t, i) => errors[i] === e.error).map((t) => t.key)).toContain(e.example);
      expect((await h.store.topErrors(id, 2)).map((e) => e.error)).toEqual(['E1: a', 'E2: b']);
      expect(await h.store.topErrors(await setup(1, { name: 'clean' }), 10)).toEqual([]);
    });

    it('listTasks filters by status, key, error text, attempted and limit, in key order', async () => {
      const { id } = await mixed();
      const list = async (f: Omit<Parameters<TaskStore['listTasks']>[0], 'batchId'>) =>
        (await h.store.listTasks({ batchId: id, ...f })).map((t) => t.key);
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
      const [row] = await h.store.listTasks({ batchId: id, status: 'SUCCESS' });
      expect(row).toMatchObject({ key: 'k003', status: 'SUCCESS', result: '"ok"', attempts: 1, payload: spec('k003').payload });
    });

    it('eachTaskPage gives what listTasks gives, page by page, each page after the last one was taken', async () => {
      const { id } = await mixed();
      const page = async (f: Omit<Parameters<TaskStore['listTasks']>[0], 'batchId'>) => {
        const pages: string[][] = [];
        await h.store.eachTaskPage({ batchId: id, ...f }, async (rows) => void pages.push(rows.map((t) => t.key)));
        return pages.flat();
      };
      for (const f of [
        {},
        { status: 'PENDING' as const },
        { status: 'PENDING' as const, attemptedOnly: true },
        { status: 'CANCELLED' as const },
        { errorContains: 'no such file' },
        { keyMatches: (k: string) => k >= 'k003' },
        { keyMatches: (k: string) => k !== 'k000', limit: 2 },
        { errorMatches: (e: string | null) => e === null },
      ]) {
        expect(await page(f)).toEqual((await h.store.listTasks({ batchId: id, ...f })).map((t) => t.key));
      }
      const [row] = await (async () => {
        const rows: Awaited<ReturnType<TaskStore['listTasks']>> = [];
        await h.store.eachTaskPage({ batchId: id, status: 'SUCCESS' }, async (r) => void rows.push(...r));
        return rows;
      })();
      expect(row).toMatchObject({ key: 'k003', status: 'SUCCESS', result: '"ok"', attempts: 1, payload: spec('k003').payload });

      // A big batch, enqueued in turns with another: every task once, in creation order, in bounded pages.
      const big = (await h.store.enqueue(newBatch('big'), keys(700, 'a').map(spec))).batch.id;
      await h.store.enqueue(newBatch('other'), keys(300, 'o').map(spec));
      await h.store.enqueue(newBatch('big'), keys(700, 'b').map(spec));
      const sizes: number[] = [];
      const seen: string[] = [];
      let taking = false;
      await h.store.eachTaskPage({ batchId: big }, async (rows) => {
        expect(taking, 'a page read before the last one was taken').toBe(false);
        taking = true;
        sizes.push(rows.length);
        seen.push(...rows.map((t) => t.key));
        await new Promise((r) => setTimeout(r, 5));
        taking = false;
      });
      expect(seen).toEqual([...keys(700, 'a'), ...keys(700, 'b')]);
      expect(sizes.length).toBeGreaterThan(2);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(500);
      let limited = 0;
      await h.store.eachTaskPage({ batchId: big, limit: 601 }, async (rows) => void (limited += rows.length));
      expect(limited).toBe(601);
    });

    it('runningTasks lists the batch RUNNING tasks only, earliest started first, at most limit', async () => {
      const id = await setup(5);
      const other = await setup(2, { name: 'other' });
      const now = Date.now();
      const late = await claimOne(id, now + 30, { owner: 'host-b/boot:7:1' });
      const early = await claimOne(id, now + 10);
      const middle = await claimOne(id, now + 20);
      const done = await claimOne(id, now + 5);
      await h.store.settle([ending(done, 'SUCCESS', now + 6)]);
      await claimOne(other, now);
      const running = await h.store.runningTasks(id, 10);
      expect(running.map((t) => t.key)).toEqual([early.key, middle.key, late.key]);
      expect(running.map((t) => t.status)).toEqual(['RUNNING', 'RUNNING', 'RUNNING']);
      expect(running[2]).toMatchObject({ leaseOwner: 'host-b/boot:7:1', workerId: late.workerId, startedAt: now + 30 });
      expect((await h.store.runningTasks(id, 2)).map((t) => t.key)).toEqual([early.key, middle.key]);
      expect(await h.store.runningTasks(id, 0)).toEqual([]);
    });

    it('getTask finds a task by key within its batch only', async () => {
      const a = await setup(1, { name: 'a' });
      const b = await h.store.enqueue(newBatch('b'), ['other'].map(spec));
      expect(await h.store.getTask(a, 'k000')).toMatchObject({ key: 'k000' });
      expect(await h.store.getTask(a, 'missing')).toBeUndefined();
      expect(await h.store.getTask(b.batch.id, 'k000')).toBeUndefined();
    });

    it('attemptsOf lists every attempt oldest first', async () => {
      const id = await setup(1, { maxAttempts: 5 });
      const now = Date.now();
      const outcomes: Outcome[] = ['FAILED', 'TIMEOUT', 'CRASHED', 'SUCCESS'];
      let taskId = 0;
      for (const [i, outcome] of outcomes.entries()) {
        const t = await claimOne(id, now + i * 100);
        taskId = t.id;
        await h.store.settle([ending(t, outcome, now + i * 100 + 50, { retryAt: now + i * 100 + 60 })]);
      }
      const attempts = await h.store.attemptsOf(taskId);
      expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4]);
      expect(attempts.map((a) => a.outcome)).toEqual(outcomes);
      expect(attempts.map((a) => a.startedAt)).toEqual([0, 1, 2, 3].map((i) => now + i * 100));
      expect(attempts.map((a) => a.endedAt)).toEqual([0, 1, 2, 3].map((i) => now + i * 100 + 50));
      expect(await h.store.attemptsOf(999_999)).toEqual([]);
    });

    it('activity spans the first start and the last finish', async () => {
      const id = await setup(2);
      expect(await h.store.activity(id)).toEqual({ firstStartedAt: null, lastFinishedAt: null });
      const now = Date.now();
      const a = await claimOne(id, now);
      const b = await claimOne(id, now + 10);
      await h.store.settle([ending(b, 'SUCCESS', now + 20), ending(a, 'SUCCESS', now + 30)]);
      expect(await h.store.activity(id)).toEqual({ firstStartedAt: now, lastFinishedAt: now + 30 });
    });
  });

  describe('statuses, changed inputs, history and prune', () => {
    it('statuses reads the current status of the given tasks, skipping unknown ids', async () => {
      const id = await setup(4);
      const now = Date.now();
      const [a, b, c] = await claim(id, now, { slots: 3 });
      await h.store.settle([ending(a!, 'SUCCESS', now + 1), ending(b!, 'FAILED', now + 1, { retryAt: null })]);
      const pending = await task(id, 'k003');
      const got = await h.store.statuses([a!.id, b!.id, c!.id, pending.id, 999_999]);
      expect([...got.entries()].sort((x, y) => x[0] - y[0])).toEqual(
        [
          [a!.id, 'SUCCESS'],
          [b!.id, 'FAILED'],
          [c!.id, 'RUNNING'],
          [pending.id, 'PENDING'],
        ].sort((x, y) => (x[0] as number) - (y[0] as number)),
      );
      expect((await h.store.statuses([])).size).toBe(0);
      // A retryable failure is PENDING again: the store, not the claim, says whether the task ended.
      await h.store.settle([ending(c!, 'FAILED', now + 2, { retryAt: now + 10 })]);
      expect((await h.store.statuses([c!.id])).get(c!.id)).toBe('PENDING');
    });

    it('batchAttempts lists the batch attempts oldest first with their keys, the most recent when cut', async () => {
      const id = await setup(2, { maxAttempts: 5 });
      const other = await setup(1, { name: 'other' });
      const now = Date.now();
      const tokens: number[] = [];
      for (let i = 0; i < 3; i++) {
        const ts = await claim(id, now + i * 10, { slots: 2 });
        tokens.push(...ts.map((t) => t.token));
        await h.store.settle(ts.map((t) => ending(t, 'FAILED', now + i * 10 + 5, { retryAt: now + i * 10 + 10 })));
      }
      await claimOne(other, now);
      const all = await h.store.batchAttempts(id, 100);
      expect(all.total).toBe(6);
      expect(all.attempts.map((a) => a.id)).toEqual(tokens);
      expect(all.attempts.map((a) => a.key)).toEqual(['k000', 'k001', 'k000', 'k001', 'k000', 'k001']);
      expect(all.attempts.map((a) => a.attempt)).toEqual([1, 1, 2, 2, 3, 3]);
      expect(all.attempts[0]).toMatchObject({ outcome: 'FAILED', endedAt: now + 5, host: HOST, workerId: 'w1' });
      const cut = await h.store.batchAttempts(id, 2);
      expect(cut).toMatchObject({ total: 6 });
      expect(cut.attempts.map((a) => a.id)).toEqual(tokens.slice(-2));
      expect(await h.store.batchAttempts(await setup(1, { name: 'idle' }), 10)).toEqual({ attempts: [], total: 0 });
      // recentAttempts: the same rows, without the count; a newer batch's attempts are not among them.
      expect(await h.store.recentAttempts(id, 100)).toEqual(all.attempts);
      expect(await h.store.recentAttempts(id, 2)).toEqual(cut.attempts);
      expect(await h.store.recentAttempts(other, 10)).toHaveLength(1);
    });

    it('historySize counts the attempts of every batch', async () => {
      expect(await h.store.historySize()).toBe(0);
      const a = await setup(2, { name: 'a' });
      const b = await setup(1, { name: 'b' });
      const now = Date.now();
      await claim(a, now, { slots: 2 });
      const t = await claimOne(b, now);
      await h.store.settle([ending(t, 'INTERRUPTED', now + 1)]);
      await claimOne(b, now + 2);
      expect(await h.store.historySize()).toBe(4);
    });

    it("listTasks order 'slowest': finished tasks, longest last attempt first, ties in key order", async () => {
      const id = await setup(5, { maxAttempts: 2 });
      const now = Date.now();
      const ts = await claim(id, now, { slots: 5 });
      const by = (k: string) => ts.find((t) => t.key === k)!;
      await h.store.settle([
        ending(by('k000'), 'SUCCESS', now + 30),
        ending(by('k001'), 'FAILED', now + 50, { retryAt: null }),
        ending(by('k002'), 'SUCCESS', now + 30),
        ending(by('k003'), 'FAILED', now + 90, { retryAt: now + 100 }),
      ]);
      // k003 is waiting to retry and k004 still runs: neither has finished.
      const slowest = async (f: Omit<TaskFilter, 'batchId' | 'order'> = {}) =>
        (await h.store.listTasks({ batchId: id, order: 'slowest', ...f })).map((t) => t.key);
      expect(await slowest()).toEqual(['k001', 'k000', 'k002']);
      expect(await slowest({ limit: 2 })).toEqual(['k001', 'k000']);
      expect(await slowest({ status: 'SUCCESS' })).toEqual(['k000', 'k002']);
      expect(await slowest({ keyMatches: (k) => k !== 'k001', limit: 1 })).toEqual(['k000']);
      // The retried task's duration is that of its last attempt.
      const again = await claimOne(id, now + 100);
      expect(again.key).toBe('k003');
      await h.store.settle([ending(again, 'SUCCESS', now + 101)]);
      expect(await slowest()).toEqual(['k001', 'k000', 'k002', 'k003']);
    });
  });
}
