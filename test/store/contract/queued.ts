import { describe, expect, it } from 'vitest';
import { HOST, LEASE_MS, ending, type Harness } from './harness.js';

/**
 * The TaskStore contract, queued attempts (SPEC §5, §7): a task claimed for a slot's place
 * behind the attempt it runs is RUNNING but counted `queued`, never `running`, until the claim
 * that follows its start says it started.
 */
export function queuedContract(h: Harness): void {
  const { setup, countsAddUp } = h;
  const claimFor = (batchId: number, now: number, queued: boolean[], started = [] as { taskId: number; token: number; at: number }[]) =>
    h.store.claim({ batchId, owner: 'owner-A', host: HOST, now, leaseMs: LEASE_MS, started, slots: queued.map((q, i) => ({ workerId: 'w1', pid: 1000 + i, queued: q })) });

  describe('queued attempts', () => {
    it('counts a task claimed for a queued place as queued, not running, and lists only running ones as running', async () => {
      const id = await setup(4);
      const now = Date.now();
      const [head, next, last] = await claimFor(id, now, [false, true, true]);
      expect(await countsAddUp(id)).toMatchObject({ total: 4, pending: 1, running: 1, queued: 2 });
      expect((await h.store.runningTasks(id, 10)).map((t) => t.key)).toEqual([head!.key]);
      // Every one of them is a RUNNING task, claimed and counted.
      for (const t of [head!, next!, last!]) expect((await h.task(id, t.key)).status).toBe('RUNNING');
    });

    it('a start given with the next claim makes a queued task running from when it started', async () => {
      const id = await setup(3);
      const now = Date.now();
      const [head, next] = await claimFor(id, now, [false, true]);
      await h.store.settle([ending(head!, 'SUCCESS', now + 10)]);
      expect(await countsAddUp(id)).toMatchObject({ running: 0, queued: 1, succeeded: 1 });
      await claimFor(id, now + 20, [], [{ taskId: next!.id, token: next!.token, at: now + 11 }]);
      expect(await countsAddUp(id)).toMatchObject({ pending: 1, running: 1, queued: 0, succeeded: 1 });
      expect(await h.task(id, next!.key)).toMatchObject({ status: 'RUNNING', startedAt: now + 11 });
      expect((await h.store.runningTasks(id, 10)).map((t) => t.key)).toEqual([next!.key]);
    });

    it('a start is fenced: a stale token or a settled task is left as it is', async () => {
      const id = await setup(3);
      const now = Date.now();
      const [, a, b] = await claimFor(id, now, [false, true, true]);
      await h.store.settle([ending(b!, 'INTERRUPTED', now + 5)]);
      await h.store.settleAndClaim([], {
        batchId: id,
        owner: 'owner-A',
        host: HOST,
        now: now + 6,
        leaseMs: LEASE_MS,
        slots: [],
        started: [
          { taskId: a!.id, token: a!.token + 1000, at: now + 6 },
          { taskId: b!.id, token: b!.token, at: now + 6 },
        ],
      });
      expect(await countsAddUp(id)).toMatchObject({ running: 1, queued: 1, pending: 1 });
      expect((await h.task(id, b!.key)).status).toBe('PENDING');
      // Claimed again, for an idle slot: running, whatever its row held before.
      const [again] = await claimFor(id, now + 7, [false]);
      expect(again!.key).toBe(b!.key);
      expect(await countsAddUp(id)).toMatchObject({ running: 2, queued: 1 });
    });
  });
}
