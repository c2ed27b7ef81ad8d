import { describe, expect, it } from 'vitest';
import type { TaskFilter } from '../../../src/store/task-store.js';
import { HOST, LEASE_MS, newBatch, ending, type Harness } from './harness.js';

/** The TaskStore contract, admin verbs: retry-failed, job updates, prune. */
export function adminContract(h: Harness): void {
  const { setup, claim, claimOne, task, countsAddUp } = h;
  describe('retryFailed and updateJob', () => {
    it('retryFailed resets only matching FAILED tasks, with a fresh budget and the history kept', async () => {
      const id = await setup(5, { maxAttempts: 2 });
      const other = await setup(1, { name: 'other', maxAttempts: 1 });
      const now = Date.now();
      const ts = await claim(id, now, { slots: 5 });
      const o = await claimOne(other, now);
      await h.store.settle([
        ending(ts[0]!, 'FAILED', now + 1, { error: 'ENOENT: gone', retryAt: null }),
        ending(ts[1]!, 'FAILED', now + 1, { error: 'EACCES: denied', retryAt: null }),
        ending(ts[2]!, 'FAILED', now + 1, { error: 'ENOENT: gone', retryAt: null }),
        ending(ts[3]!, 'FAILED', now + 1, { error: 'ENOENT: retrying', retryAt: now + 10 }),
        ending(ts[4]!, 'SUCCESS', now + 1),
        ending(o, 'FAILED', now + 1, { error: 'ENOENT: gone', retryAt: null }),
      ]);

      expect(await h.store.retryFailed({ batchId: id, errorContains: 'ENOENT', keyMatches: (k) => k !== 'k002' })).toBe(1);
      expect(await task(id, 'k000')).toMatchObject({ status: 'PENDING', attempts: 0, maxAttempts: 2, finishedAt: null });
      expect(await task(id, 'k001')).toMatchObject({ status: 'FAILED', attempts: 1 });
      expect(await task(id, 'k002')).toMatchObject({ status: 'FAILED', attempts: 1 });
      expect(await task(id, 'k003')).toMatchObject({ status: 'PENDING', attempts: 1 });
      expect(await task(id, 'k004')).toMatchObject({ status: 'SUCCESS' });
      expect(await task(other, o.key)).toMatchObject({ status: 'FAILED' });
      expect(await countsAddUp(id)).toMatchObject({ pending: 1, retrying: 1, failed: 2, succeeded: 1 });
      expect((await h.store.attemptsOf(ts[0]!.id)).map((a) => a.outcome)).toEqual(['FAILED']);

      // A reset task is claimable at once and gets its whole budget again; its attempt number goes on counting (SPEC §6).
      const again = await claimOne(id, now + 2);
      expect(again).toMatchObject({ key: 'k000', attempt: 2, counted: 1 });
      await h.store.settle([ending(again, 'FAILED', now + 3, { retryAt: now + 3 })]);
      expect(await task(id, 'k000')).toMatchObject({ status: 'PENDING', attempts: 1 });
      expect((await h.store.attemptsOf(ts[0]!.id)).map((a) => a.attempt)).toEqual([1, 2]);

      expect(await h.store.retryFailed({ batchId: id })).toBe(2);
      expect(await h.store.retryFailed({ batchId: id })).toBe(0);
      expect(await countsAddUp(id)).toMatchObject({ failed: 0, pending: 2 });
    });

    it('retryFailed ignores a status in the filter: only FAILED tasks are reset', async () => {
      const id = await setup(2);
      const now = Date.now();
      const [a, b] = await claim(id, now, { slots: 2 });
      await h.store.settle([ending(a!, 'SUCCESS', now + 1), ending(b!, 'FAILED', now + 1, { retryAt: null })]);
      expect(await h.store.retryFailed({ batchId: id, status: 'SUCCESS' })).toBe(1);
      expect(await task(id, a!.key)).toMatchObject({ status: 'SUCCESS' });
      expect(await task(id, b!.key)).toMatchObject({ status: 'PENDING', attempts: 0 });
    });

    it('updateJob replaces the job and the budget of unfinished tasks only', async () => {
      const id = await setup(4, { maxAttempts: 1 });
      const now = Date.now();
      const [done, failed, running] = await claim(id, now, { slots: 3 });
      await h.store.settle([ending(done!, 'SUCCESS', now + 1), ending(failed!, 'FAILED', now + 1, { retryAt: null })]);
      const job = { version: 1, handler: { exec: 'gzip {}' }, retries: 4 };
      await h.store.updateJob(id, job, 5);
      expect((await h.store.findBatch('batch'))?.job).toEqual(job);
      expect(await task(id, done!.key)).toMatchObject({ status: 'SUCCESS', maxAttempts: 1 });
      expect(await task(id, failed!.key)).toMatchObject({ status: 'FAILED', maxAttempts: 1 });
      expect(await task(id, running!.key)).toMatchObject({ status: 'RUNNING', maxAttempts: 5 });
      expect(await task(id, 'k003')).toMatchObject({ status: 'PENDING', maxAttempts: 5 });
      // The running attempt now has retries left under the new budget.
      await h.store.settle([ending(running!, 'FAILED', now + 2, { retryAt: now + 3 })]);
      expect(await task(id, running!.key)).toMatchObject({ status: 'PENDING', attempts: 1 });
      expect(await claimOne(id, now + 3)).toMatchObject({ maxAttempts: 5 });
    });

    it('updateJob bumps the job version; a claim under another version claims nothing; each attempt records its version', async () => {
      const id = await setup(3);
      const now = Date.now();
      expect((await h.store.findBatch('batch'))?.jobVersion).toBe(1);
      const request = (jobVersion: number | undefined, at: number) => ({ batchId: id, owner: 'owner-A', host: HOST, now: at, leaseMs: LEASE_MS, slots: [{ workerId: 'w1', pid: 1 }], jobVersion });
      const [first] = await h.store.claim(request(1, now));
      expect(await h.store.updateJob(id, { version: 1, handler: { exec: 'B {}' } }, 3)).toBe(2);
      expect((await h.store.findBatch('batch'))?.jobVersion).toBe(2);
      // A coordinator still running the first definition's handler starts nothing more, in either verb.
      expect(await h.store.claim(request(1, now + 1))).toEqual([]);
      expect((await h.store.settleAndClaim([ending(first!, 'SUCCESS', now + 1)], request(1, now + 1))).claimed).toEqual([]);
      expect(await task(id, first!.key)).toMatchObject({ status: 'SUCCESS' }); // its result still lands
      const [second] = await h.store.claim(request(2, now + 2));
      const [third] = await h.store.claim(request(undefined, now + 3)); // no version asked: the stored one
      expect((await h.store.attemptsOf(first!.id)).map((a) => a.jobVersion)).toEqual([1]);
      expect((await h.store.attemptsOf(second!.id)).map((a) => a.jobVersion)).toEqual([2]);
      expect((await h.store.attemptsOf(third!.id)).map((a) => a.jobVersion)).toEqual([2]);
      expect(await h.store.counts(id)).toMatchObject({ running: 2, succeeded: 1, pending: 0 });
    });
  });

  describe('statuses, changed inputs, history and prune', () => {
    it('pruneFinished deletes idle finished batches with their tasks and attempts, and nothing else', async () => {
      const now = Date.now();
      const done = await setup(3, { name: 'done', maxAttempts: 1 });
      const [ok, bad, lost] = await claim(done, now, { slots: 3, leaseMs: 10 });
      await h.store.settle([ending(ok!, 'SUCCESS', now + 1), ending(bad!, 'FAILED', now + 2, { retryAt: null })]);
      await h.store.releaseStale(done, now + 100, [], 'self');
      const busy = await setup(2, { name: 'busy' });
      await h.store.settle([ending(await claimOne(busy, now), 'SUCCESS', now + 1)]);
      const running = await setup(1, { name: 'running' });
      await claimOne(running, now, { leaseMs: 10 });
      const recent = await setup(1, { name: 'recent' });
      await h.store.settle([ending(await claimOne(recent, now), 'SUCCESS', now + 3_600_000)]);
      await h.store.enqueue(newBatch('empty'), []);
      const history = await h.store.historySize();

      const before = Date.now() + 60_000;
      const result = await h.store.pruneFinished(before);
      expect([...result.batches].sort()).toEqual(['done', 'empty']);
      expect(result).toMatchObject({ tasks: 3, attempts: 3 });
      expect([...result.logPaths].sort()).toEqual([`/logs/${ok!.key}.log`, `/logs/${bad!.key}.log`]);
      expect(lost).toBeDefined();
      expect(await h.store.findBatch('done')).toBeUndefined();
      expect(await h.store.getTask(done, 'k000')).toBeUndefined();
      expect(await h.store.attemptsOf(ok!.id)).toEqual([]);
      expect((await h.store.listBatches()).map((b) => b.name)).toEqual(['busy', 'running', 'recent']);
      expect(await h.store.historySize()).toBe(history - 3);
      expect((await h.store.counts(busy)).total).toBe(2);
      expect(await h.store.pruneFinished(before)).toEqual({ batches: [], tasks: 0, attempts: 0, logPaths: [] });
      // Once its last finish is old enough, the recent batch goes too.
      expect((await h.store.pruneFinished(now + 3_600_001)).batches).toEqual(['recent']);
    });

    it('prunableBatches names what pruneFinished would delete; with `only`, that batch alone, whatever its age', async () => {
      const now = Date.now();
      const a = await setup(1, { name: 'a' });
      await h.store.settle([ending(await claimOne(a, now), 'SUCCESS', now + 1)]);
      const b = await setup(1, { name: 'b' });
      await h.store.settle([ending(await claimOne(b, now), 'SUCCESS', now + 1)]);
      const open = await setup(1, { name: 'open' });
      const later = Date.now() + 60_000;
      expect((await h.store.prunableBatches(later)).map((x) => x.name)).toEqual(['a', 'b']);
      expect(await h.store.prunableBatches(now - 60_000)).toEqual([]);
      expect((await h.store.prunableBatches(Number.MAX_SAFE_INTEGER, b)).map((x) => x.name)).toEqual(['b']);
      expect(await h.store.prunableBatches(Number.MAX_SAFE_INTEGER, open)).toEqual([]);
      expect(await h.store.historySize()).toBe(2); // nothing deleted by looking
      const result = await h.store.pruneFinished(Number.MAX_SAFE_INTEGER, undefined, b);
      expect(result).toMatchObject({ batches: ['b'], tasks: 1, attempts: 1 });
      expect((await h.store.listBatches()).map((x) => x.name)).toEqual(['a', 'open']);
      expect((await h.store.pruneFinished(Number.MAX_SAFE_INTEGER, undefined, open)).batches).toEqual([]);
    });

    it('pruneFinished deletes a batch bigger than one chunk whole, handing each chunk\'s log paths over as it goes', async () => {
      const now = Date.now();
      const big = await setup(4500, { name: 'big', maxAttempts: 1 });
      const ts = await claim(big, now, { slots: 3 });
      await h.store.settle(ts.map((t, i) => ending(t, 'SUCCESS', now + 1 + i)));
      await h.store.cancel({ batchId: big });
      const chunks: [string, string[]][] = [];
      const result = await h.store.pruneFinished(Date.now() + 60_000, (batch, paths) => chunks.push([batch, paths]));
      expect(result).toEqual({ batches: ['big'], tasks: 4500, attempts: 3, logPaths: [] });
      expect(chunks.flatMap(([, paths]) => paths).sort()).toEqual(ts.map((t) => `/logs/${t.key}.log`).sort());
      expect(chunks.every(([batch]) => batch === 'big')).toBe(true);
      expect(await h.store.findBatch('big')).toBeUndefined();
      expect(await h.store.historySize()).toBe(0);
    });

    it('listTasks and retryFailed match errors with errorMatches, null for no error', async () => {
      const id = await setup(4, { maxAttempts: 1 });
      const now = Date.now();
      const [a, b, c] = await claim(id, now, { slots: 3 });
      await h.store.settle([
        ending(a!, 'FAILED', now + 1, { error: 'ENOENT: /data/a missing', retryAt: null }),
        ending(b!, 'FAILED', now + 1, { error: 'ENOENT: /data/b missing', retryAt: null }),
        ending(c!, 'FAILED', now + 1, { error: null, retryAt: null }),
      ]);
      const signature = (e: string | null) => e !== null && /^ENOENT: \S+ missing$/.test(e);
      const list = async (f: Omit<TaskFilter, 'batchId'>) => (await h.store.listTasks({ batchId: id, ...f })).map((t) => t.key);
      expect(await list({ errorMatches: signature })).toEqual(['k000', 'k001']);
      expect(await list({ errorMatches: (e) => e === null })).toEqual(['k002', 'k003']);
      expect(await list({ errorMatches: (e) => e === null, status: 'FAILED' })).toEqual(['k002']);
      expect(await list({ errorMatches: signature, limit: 1 })).toEqual(['k000']);
      expect(await h.store.topErrors(id, 10)).toEqual([
        { error: '(no error recorded)', count: 1, example: 'k002' },
        { error: 'ENOENT: /data/a missing', count: 1, example: 'k000' },
        { error: 'ENOENT: /data/b missing', count: 1, example: 'k001' },
      ]);
      expect(await h.store.retryFailed({ batchId: id, errorMatches: signature, keyMatches: (k) => k !== 'k001' })).toBe(1);
      expect(await task(id, 'k000')).toMatchObject({ status: 'PENDING', attempts: 0 });
      expect(await task(id, 'k001')).toMatchObject({ status: 'FAILED' });
      expect(await h.store.retryFailed({ batchId: id, limit: 0 })).toBe(0);
      expect(await h.store.retryFailed({ batchId: id, errorMatches: (e) => e === null })).toBe(1);
      expect(await task(id, 'k002')).toMatchObject({ status: 'PENDING', attempts: 0 });
    });
  });
}
