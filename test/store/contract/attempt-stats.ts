import { describe, expect, it } from 'vitest';
import { ending, type Harness } from './harness.js';

/** The TaskStore contract, attemptStats: what `metrics` reads of a batch's attempts. */
export function attemptStatsContract(h: Harness): void {
  const { setup, claim } = h;
  describe('attemptStats', () => {
    it('counts ended attempts per outcome and buckets their durations (≤ a bound is inside it), this batch only', async () => {
      const id = await setup(6, { maxAttempts: 3 });
      const other = await setup(2, { name: 'other' });
      const now = Date.now();
      const ts = await claim(id, now, { slots: 6 });
      const os = await claim(other, now, { slots: 2 });
      await h.store.settle([
        ending(ts[0]!, 'SUCCESS', now + 1, { durationMs: 0 }),
        ending(ts[1]!, 'SUCCESS', now + 1, { durationMs: 10 }),
        ending(ts[2]!, 'FAILED', now + 1, { durationMs: 11, retryAt: now + 1 }),
        ending(ts[3]!, 'TIMEOUT', now + 1, { durationMs: 1000, retryAt: now + 1 }),
        ending(ts[4]!, 'CRASHED', now + 1, { durationMs: 5000, retryAt: null }),
        // ts[5] stays running: not counted.
        ...os.map((t) => ending(t, 'SUCCESS', now + 1, { durationMs: 3 })),
      ]);
      const s = await h.store.attemptStats(id, [10, 1000, 2000]);
      expect(s.outcomes).toEqual({ SUCCESS: 2, FAILED: 1, TIMEOUT: 1, CRASHED: 1, LOST: 0, INTERRUPTED: 0, BUSY: 0 });
      expect(s.boundsMs).toEqual([10, 1000, 2000]);
      expect(s.buckets).toEqual([2, 4, 4]);
      expect(s.count).toBe(5);
      expect(s.sumMs).toBe(0 + 10 + 11 + 1000 + 5000);

      // The retried tasks run again: each attempt counts, not each task.
      const again = await claim(id, now + 2, { slots: 6 });
      expect(again).toHaveLength(2);
      await h.store.settle(again.map((t) => ending(t, 'SUCCESS', now + 3, { durationMs: 2000 })));
      const s2 = await h.store.attemptStats(id, [10, 1000, 2000]);
      expect(s2.outcomes).toMatchObject({ SUCCESS: 4, FAILED: 1, TIMEOUT: 1 });
      expect(s2.buckets).toEqual([2, 4, 6]);
      expect(s2.count).toBe(7);
      expect(s2.sumMs).toBe(6021 + 4000);
    });

    it('counts a lost attempt without a duration, and nothing for a batch without attempts', async () => {
      const id = await setup(2);
      const now = Date.now();
      await claim(id, now, { slots: 1, owner: 'dead-owner' });
      await h.store.releaseStale(id, now + 1, ['dead-owner'], 'self');
      const s = await h.store.attemptStats(id, [10]);
      expect(s.outcomes).toMatchObject({ LOST: 1, SUCCESS: 0 });
      expect(s).toMatchObject({ buckets: [0], count: 0, sumMs: 0 });

      const empty = await setup(1, { name: 'untouched' });
      expect(await h.store.attemptStats(empty, [10, 20])).toMatchObject({ buckets: [0, 0], count: 0, sumMs: 0, outcomes: { SUCCESS: 0, LOST: 0 } });
    });

    it('refuses bounds that are not ascending whole milliseconds', async () => {
      const id = await setup(1);
      await expect(h.store.attemptStats(id, [10, 10])).rejects.toThrow(/ascending/);
      await expect(h.store.attemptStats(id, [0.5])).rejects.toThrow(/whole/);
    });
  });
}
