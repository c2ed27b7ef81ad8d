import { describe, expect, it } from 'vitest';
import type { HookTake } from '../../../src/store/task-store.js';
import type { Harness } from './harness.js';

/**
 * The TaskStore contract, batch hooks (SPEC §10): a hook's run at an end of the batch is
 * recorded before it runs and taken by one start only; a start whose owner died, or whose lease
 * ran out, is taken over with the same id; a new end gets a new id.
 */
export function hooksContract(h: Harness): void {
  describe('batch hooks', () => {
    /** Owners on another host: none provably dead, none a live process here. */
    const elsewhere = { dead: () => false, liveHere: () => false };
    const take = (batchId: number, owner: string, now: number, over: Partial<HookTake> = {}): HookTake => ({
      batchId,
      hook: 'complete',
      endMark: '1000/3/0/0',
      command: 'notify {batch}',
      owner,
      now,
      leaseMs: 30_000,
      ...over,
    });

    it('one start takes it, another while it runs does not; its end is recorded, fenced on its owner, and no start takes it again', async () => {
      const id = await h.setup(1);
      const t = Date.now();
      const first = await h.store.takeHook(take(id, 'run-A', t), elsewhere);
      expect(first.taken).toBe(true);
      expect(first.record).toMatchObject({ hook: 'complete', owner: 'run-A', runs: 1, endedAt: null, command: 'notify {batch}' });
      expect(first.record.id).toMatch(new RegExp(`-${id}-complete-1$`));
      const second = await h.store.takeHook(take(id, 'run-B', t + 10), elsewhere);
      expect(second).toMatchObject({ taken: false, record: { owner: 'run-A', id: first.record.id } });
      expect(await h.store.renewHook(id, 'complete', '1000/3/0/0', 'run-A', t + 60_000)).toBe(true);
      expect(await h.store.endHook(id, 'complete', '1000/3/0/0', 'run-B', { endedAt: t + 20, exitCode: 0, signal: null, output: '' })).toBe(false);
      expect(await h.store.endHook(id, 'complete', '1000/3/0/0', 'run-A', { endedAt: t + 30, exitCode: 3, signal: null, output: 'sent\n' })).toBe(true);
      // Ended: not even a dead owner's lets another start take it.
      expect((await h.store.takeHook(take(id, 'run-C', t + 120_000), { dead: () => true, liveHere: () => false })).taken).toBe(false);
      const [rec] = await h.store.hooksOf(id);
      expect(rec).toMatchObject({ id: first.record.id, runs: 1, exitCode: 3, output: 'sent\n', endedAt: t + 30 });
    });

    it('a run whose owner died, or whose lease ran out (its owner no live process here), is taken over with the same id and one more run; the old owner is fenced off', async () => {
      const id = await h.setup(1);
      const t = Date.now();
      const first = await h.store.takeHook(take(id, 'run-A', t), elsewhere);
      const dead = await h.store.takeHook(take(id, 'run-B', t + 10), { dead: (o) => o === 'run-A', liveHere: () => false });
      expect(dead).toMatchObject({ taken: true, record: { id: first.record.id, owner: 'run-B', runs: 2 } });
      expect(await h.store.renewHook(id, 'complete', '1000/3/0/0', 'run-A', t + 60_000)).toBe(false);
      // run-B's lease (30 s from t + 10) runs out: a start after it takes over, though run-B looks alive.
      expect((await h.store.takeHook(take(id, 'run-C', t + 20_000), elsewhere)).taken).toBe(false);
      // A live process of this host (frozen by SIGSTOP, say) keeps it, lease or not: its command runs on.
      expect((await h.store.takeHook(take(id, 'run-C', t + 40_011), { dead: () => false, liveHere: (o) => o === 'run-B' })).taken).toBe(false);
      const late = await h.store.takeHook(take(id, 'run-C', t + 40_011), elsewhere);
      expect(late).toMatchObject({ taken: true, record: { id: first.record.id, owner: 'run-C', runs: 3 } });
      // A take retried by its owner (its first reply lost) is its own again, not one more run.
      expect(await h.store.takeHook(take(id, 'run-C', t + 40_020), elsewhere)).toMatchObject({ taken: true, record: { owner: 'run-C', runs: 3 } });
      // So is an end recorded twice with the same time.
      const end = { endedAt: t + 40_100, exitCode: 0, signal: null, output: '' };
      expect(await h.store.endHook(id, 'complete', '1000/3/0/0', 'run-C', end)).toBe(true);
      expect(await h.store.endHook(id, 'complete', '1000/3/0/0', 'run-C', end)).toBe(true);
      expect(await h.store.endHook(id, 'complete', '1000/3/0/0', 'run-C', { ...end, endedAt: t + 40_200 })).toBe(false);
    });

    it('a new end is a new run with the next id; each hook and each batch its own', async () => {
      const id = await h.setup(1);
      const other = await h.setup(1, { name: 'other-hooks' });
      const t = Date.now();
      const a = await h.store.takeHook(take(id, 'run-A', t), elsewhere);
      const b = await h.store.takeHook(take(id, 'run-A', t + 1, { endMark: '2000/4/0/0' }), elsewhere);
      const f = await h.store.takeHook(take(id, 'run-A', t + 2, { hook: 'failure' }), elsewhere);
      const o = await h.store.takeHook(take(other, 'run-A', t + 3), elsewhere);
      expect([a, b, f, o].map((x) => x.taken)).toEqual([true, true, true, true]);
      expect(a.record.id).toMatch(/-complete-1$/);
      expect(b.record.id).toMatch(/-complete-2$/);
      expect(f.record.id).toMatch(/-failure-1$/);
      expect(new Set([a, b, f, o].map((x) => x.record.id)).size).toBe(4);
      expect((await h.store.hooksOf(id)).map((r) => r.id)).toEqual([f.record.id, b.record.id, a.record.id]);
    });
  });
}
