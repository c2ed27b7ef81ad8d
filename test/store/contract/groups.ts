import { describe, expect, it } from 'vitest';
import { HOST, LEASE_MS, ending, type Harness } from './harness.js';

/**
 * The TaskStore contract, groups (SPEC §10, `-n`, a handler's `batch`): a free place claims a
 * group's tasks as that many slots of one worker in one transaction, each task its own attempt,
 * and one commit settles the whole group, each task by its own outcome.
 */
export function groupsContract(h: Harness): void {
  const { setup, countsAddUp } = h;
  /** Claims `places` groups of `perPlace` tasks for worker w1 (its first place running, the others queued). */
  const claimGroups = (batchId: number, now: number, perPlace: number, places: number, owner = 'owner-A') =>
    h.store.claim({
      batchId,
      owner,
      host: HOST,
      now,
      leaseMs: LEASE_MS,
      slots: Array.from({ length: perPlace * places }, (_, i) => ({ workerId: 'w1', pid: 4242, queued: i >= perPlace })),
    });

  describe('groups', () => {
    it('one claim takes a group of 64 tasks in key order, each leased with its own first attempt', async () => {
      const id = await setup(100);
      const now = Date.now();
      const group = await claimGroups(id, now, 64, 1);
      expect(group.map((t) => t.key)).toEqual(Array.from({ length: 64 }, (_, i) => `k${String(i).padStart(3, '0')}`));
      expect(new Set(group.map((t) => t.token)).size).toBe(64);
      for (const t of group) expect(t.attempt).toBe(1);
      expect(await countsAddUp(id)).toMatchObject({ pending: 36, running: 64, queued: 0 });
      // Leased: another owner claims only what is left.
      const rest = await claimGroups(id, now + 1, 64, 1, 'owner-B');
      expect(rest.map((t) => t.key)).toEqual(Array.from({ length: 36 }, (_, i) => `k${String(i + 64).padStart(3, '0')}`));
    });

    it('a group queued behind another is counted queued, item by item', async () => {
      const id = await setup(10);
      await claimGroups(id, Date.now(), 4, 2);
      expect(await countsAddUp(id)).toMatchObject({ pending: 2, running: 4, queued: 4 });
    });

    it("one commit settles a group, each task by its own outcome: successes, a failure with retries left, a final one, a split group's uncharged ones", async () => {
      const id = await setup(6, { maxAttempts: 2 });
      const now = Date.now();
      const [a, b, c, d, e, f] = await claimGroups(id, now, 6, 1);
      const applied = await h.store.settle([
        ending(a!, 'SUCCESS', now + 5, { result: '"a"' }),
        ending(b!, 'SUCCESS', now + 5, { result: '"b"' }),
        ending(c!, 'FAILED', now + 5, { retryAt: now + 100 }),
        ending(d!, 'FAILED', now + 5, { retryAt: null }),
        ending(e!, 'INTERRUPTED', now + 5),
        ending(f!, 'INTERRUPTED', now + 5),
      ]);
      expect(applied.map((x) => x.status)).toEqual(['SUCCESS', 'SUCCESS', 'PENDING', 'FAILED', 'PENDING', 'PENDING']);
      expect(await countsAddUp(id)).toMatchObject({ succeeded: 2, failed: 1, retrying: 1, pending: 2 });
      // The uncharged ones come back with their budget whole; the retry with one attempt counted.
      const again = await claimGroups(id, now + 200, 6, 1);
      const byKey = new Map(again.map((t) => [t.key, t]));
      expect(byKey.get(e!.key)).toMatchObject({ counted: 1 });
      expect(byKey.get(c!.key)).toMatchObject({ attempt: 2, counted: 2 });
      expect(again).toHaveLength(3); // c, e, f: a and b succeeded, d failed for good
    });
  });
}
