import { describe, expect, it } from 'vitest';
import { ending, newBatch, spec, type Harness } from './harness.js';

/** The TaskStore contract, stages: needs, inputs, the cancel cascade. */
export function stagesContract(h: Harness): void {
  const { setup, claim, claimOne, task, countsAddUp } = h;
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
      return (await h.store.enqueue(newBatch('staged', maxAttempts), specs)).batch.id;
    }

    it('stores stage, item, needs and each stage its own budget; getTask finds stage keys', async () => {
      const id = await pipeline(['a']);
      expect(await task(id, 'thumb/a')).toMatchObject({ stage: 'thumb', item: 'a', needs: ['transcode'], maxAttempts: 1, status: 'PENDING' });
      expect(await task(id, 'transcode/a')).toMatchObject({ stage: 'transcode', item: 'a', needs: [], maxAttempts: 2 });
      expect(await h.store.getTask(id, 'a')).toBeUndefined();
    });

    it('claims a stage task only once all its needs succeeded for the same item, and hands it their results', async () => {
      const id = await pipeline(['a', 'b']);
      const now = Date.now();
      const first = await claim(id, now, { slots: 4 });
      expect(first.map((t) => t.key)).toEqual(['transcode/a', 'transcode/b']); // the dependents are not claimable
      expect(await claim(id, now, { slots: 2 })).toEqual([]);
      expect(await h.store.nextDueAt(id)).toBeNull(); // nothing is due while the needs run
      await h.store.settle([ending(first[0]!, 'SUCCESS', now + 1, { result: JSON.stringify({ out: 'a.ts' }) })]);
      const next = await claim(id, now + 2, { slots: 4 });
      expect(next.map((t) => t.key).sort()).toEqual(['pkg/a', 'thumb/a']); // only item a's
      expect(next.every((t) => JSON.stringify(t.inputs) === JSON.stringify({ transcode: { out: 'a.ts' } }))).toBe(true);
      const c = await h.store.stageCounts(id);
      expect(c.map((x) => [x.stage, x.total, x.succeeded, x.running, x.pending])).toEqual([
        ['pkg', 2, 0, 1, 1],
        ['thumb', 2, 0, 1, 1],
        ['transcode', 2, 1, 1, 0],
      ]);
      // A need settled in a tick makes its dependents claimable in the same tick, with its
      // result as their input (on PostgreSQL a tick of successes is one statement).
      const tick = await h.store.settleAndClaim([ending(first[1]!, 'SUCCESS', now + 3, { result: JSON.stringify({ out: 'b.ts' }) })], {
        batchId: id,
        owner: 'owner-A',
        host: 'h',
        now: now + 4,
        leaseMs: 1000,
        slots: [{ workerId: 'w1', pid: null }, { workerId: 'w2', pid: null }, { workerId: 'w3', pid: null }],
      });
      expect(tick.applied).toEqual([{ token: first[1]!.token, status: 'SUCCESS' }]);
      expect(tick.claimed.map((t) => t.key).sort()).toEqual(['pkg/b', 'thumb/b']);
      expect(tick.claimed.map((t) => t.inputs)).toEqual([{ transcode: { out: 'b.ts' } }, { transcode: { out: 'b.ts' } }]);
    });

    it('a need whose declared output is not in place yet holds its dependents; pendingOutputs lists it until outputsPlaced', async () => {
      const id = await pipeline(['a']);
      const now = Date.now();
      const [t] = await claim(id, now, { slots: 1 });
      const temp = '/o/.a.ts.splitdance-x-1-ab.tmp';
      await h.store.settle([{ ...ending(t!, 'SUCCESS', now + 1, { result: JSON.stringify({ out: '/o/a.ts' }) }), outputTemp: temp }]);
      const pending = { taskId: t!.id, batchId: id, key: t!.key, temp, out: '/o/a.ts' };
      expect(await h.store.pendingOutputs(id)).toEqual([pending]);
      expect(await h.store.pendingOutputs(null)).toContainEqual(pending); // every batch's: what a run of another batch looks at
      expect(await claim(id, now + 2, { slots: 4 })).toEqual([]); // committed, but its output is not in place
      await h.store.outputsPlaced([{ taskId: t!.id, temp: 'another attempt' }]); // not the recorded one: nothing changes
      expect(await h.store.pendingOutputs(id)).toHaveLength(1);
      const next = await h.store.settleAndClaim([], { batchId: id, owner: 'o', host: 'h', now: now + 3, leaseMs: 1000, slots: [{ workerId: 'w1', pid: null }, { workerId: 'w2', pid: null }] }, [{ taskId: t!.id, temp }]);
      expect(next.claimed.map((c) => c.key).sort()).toEqual(['pkg/a', 'thumb/a']); // confirmed in the claim's own transaction
      expect(await h.store.pendingOutputs(id)).toEqual([]);
      expect((await h.store.pendingOutputs(null)).filter((p) => p.batchId === id)).toEqual([]);
    });

    it("a need that fails terminally cancels its item's dependents (transitively) with the reason; a retry does not", async () => {
      const id = await pipeline(['a', 'b']);
      const now = Date.now();
      const [ta, tb] = await claim(id, now, { slots: 2 });
      await h.store.settle([ending(ta!, 'FAILED', now + 1, { retryAt: now + 5 })]); // attempt 1 of 2: retried
      expect(await task(id, 'thumb/a')).toMatchObject({ status: 'PENDING' });
      await h.store.settle([ending(tb!, 'FAILED', now + 1, { retryAt: null })]); // permanent
      for (const key of ['thumb/b', 'pkg/b']) {
        expect(await task(id, key)).toMatchObject({ status: 'CANCELLED', lastError: 'needs transcode: FAILED', attempts: 0 });
      }
      expect(await task(id, 'thumb/a')).toMatchObject({ status: 'PENDING' });
      expect(await countsAddUp(id)).toMatchObject({ failed: 1, cancelled: 2, retrying: 1, pending: 2 });

      // retry-failed on the failed stage brings its dependents back; they wait for it again
      expect(await h.store.retryFailed({ batchId: id, keyMatches: (k) => k === 'transcode/b' })).toBe(1);
      for (const key of ['transcode/b', 'thumb/b', 'pkg/b']) expect(await task(id, key)).toMatchObject({ status: 'PENDING', lastError: null });
      const again = await claim(id, now + 10, { slots: 4 });
      expect(again.map((t) => t.key).sort()).toEqual(['transcode/a', 'transcode/b']);
    });

    it('a lost need (its coordinator died, budget spent) cancels the dependents too', async () => {
      const id = await pipeline(['a'], 1);
      const now = Date.now();
      const t = await claimOne(id, now, { owner: 'dead-owner' });
      const released = await h.store.releaseStale(id, now + 1, ['dead-owner'], 'me');
      expect(released).toEqual([{ key: t.key, owner: 'dead-owner', failed: true, token: t.token, stage: 'transcode', seq: t.seq, payload: t.payload, inputs: {} }]);
      expect(await task(id, 'pkg/a')).toMatchObject({ status: 'CANCELLED', lastError: 'needs transcode: FAILED' });
    });

    it('cancel ends matching PENDING tasks now and their dependents; RUNNING ones end CANCELLED unless they succeed', async () => {
      const id = await pipeline(['a', 'b', 'c']);
      const now = Date.now();
      const [ta, tb] = await claim(id, now, { slots: 2 });
      const r = await h.store.cancel({ batchId: id, keyMatches: (k) => k.startsWith('transcode/') });
      expect(r).toEqual({ cancelled: 1, stopping: 2, dependents: 2 }); // c now (and its 2 dependents); a, b run on
      expect(await task(id, 'transcode/c')).toMatchObject({ status: 'CANCELLED', lastError: 'cancelled' });
      expect(await task(id, 'thumb/c')).toMatchObject({ status: 'CANCELLED', lastError: 'needs transcode: CANCELLED' });
      // a fails with retries left: CANCELLED, not retried, and its dependents go with it; b succeeds
      await h.store.settle([ending(ta!, 'FAILED', now + 1, { retryAt: now + 2 }), ending(tb!, 'SUCCESS', now + 1)]);
      expect(await task(id, 'transcode/a')).toMatchObject({ status: 'CANCELLED', attempts: 1 });
      expect((await task(id, 'transcode/a')).lastError).toMatch(/^cancelled; its last attempt: FAILED: boom/);
      expect(await task(id, 'pkg/a')).toMatchObject({ status: 'CANCELLED', lastError: 'needs transcode: CANCELLED' });
      expect(await task(id, 'transcode/b')).toMatchObject({ status: 'SUCCESS' });
      expect((await claim(id, now + 3, { slots: 4 })).map((t) => t.key).sort()).toEqual(['pkg/b', 'thumb/b']);
      expect(await h.store.cancel({ batchId: id })).toEqual({ cancelled: 0, stopping: 2, dependents: 0 });
      expect(await countsAddUp(id)).toMatchObject({ running: 2, succeeded: 1, cancelled: 6 });
    });

    it('retry-failed on a task whose need is itself FAILED cancels it at once instead of leaving it unclaimable', async () => {
      const id = await pipeline(['a'], 1);
      const now = Date.now();
      await h.store.settle([ending(await claimOne(id, now), 'SUCCESS', now + 1)]); // transcode/a
      const [thumb, pkg] = await claim(id, now + 2, { slots: 2 });
      await h.store.settle([ending(thumb!, 'FAILED', now + 3, { retryAt: null }), ending(pkg!, 'SUCCESS', now + 3)]);
      // The input changed: transcode/a runs again and now fails for good; thumb/a stays FAILED.
      const changed = ['transcode', 'thumb', 'pkg'].map((stage) => ({ ...spec('a'), fingerprint: 'other', key: `${stage}/a`, stage, item: 'a', needs: stage === 'transcode' ? [] : ['transcode'], maxAttempts: 1 }));
      await h.store.enqueue(newBatch('staged', 1), changed, { rerunChanged: true });
      const again = await claimOne(id, now + 4);
      expect(again.key).toBe('transcode/a');
      await h.store.settle([ending(again, 'FAILED', now + 5, { retryAt: null })]);
      expect(await task(id, 'pkg/a')).toMatchObject({ status: 'CANCELLED', lastError: 'needs transcode: FAILED' });
      expect(await h.store.retryFailed({ batchId: id, keyMatches: (k) => k === 'thumb/a' })).toBe(1);
      expect(await task(id, 'thumb/a')).toMatchObject({ status: 'CANCELLED', lastError: 'needs transcode: FAILED' });
      expect(await countsAddUp(id)).toMatchObject({ pending: 0, running: 0, failed: 1, cancelled: 2 });
    });

    it('cancel without stages: an interrupted attempt of a cancelled task ends CANCELLED; retry-failed leaves cancelled tasks alone', async () => {
      const id = await setup(3);
      const now = Date.now();
      const t = await claimOne(id, now);
      expect(await h.store.cancel({ batchId: id, keyMatches: (k) => k !== 'k002' })).toEqual({ cancelled: 1, stopping: 1, dependents: 0 });
      await h.store.settle([ending(t, 'INTERRUPTED', now + 1)]);
      expect(await task(id, 'k000')).toMatchObject({ status: 'CANCELLED', attempts: 0 });
      expect(await h.store.retryFailed({ batchId: id })).toBe(0);
      expect((await claim(id, now + 2, { slots: 3 })).map((x) => x.key)).toEqual(['k002']);
      expect(await countsAddUp(id)).toMatchObject({ cancelled: 2, running: 1 });
    });
  });
}
