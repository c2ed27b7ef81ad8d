import { describe, expect, it } from 'vitest';
import { ending, HOST, LEASE_MS, newBatch, spec, type Harness } from './harness.js';

/**
 * The TaskStore contract, busy answers (SPEC §10): a BUSY settlement puts its task back to wait
 * until retryAt without spending its budget, its attempt number goes on, and the task keeps
 * when its busy streak began until another outcome ends it.
 */
export function busyContract(h: Harness): void {
  const { setup, claimOne, task } = h;
  describe('busy answers', () => {
    it('BUSY: back to PENDING until retryAt, uncharged even on the last attempt, numbered on; the streak kept, then cleared', async () => {
      const id = await setup(1, { maxAttempts: 1 });
      const now = Date.now();
      const first = await claimOne(id, now);
      expect(first).toMatchObject({ attempt: 1, counted: 1, busySince: null });
      expect(await h.store.settle([ending(first, 'BUSY', now + 10, { retryAt: now + 100 })])).toEqual([{ token: first.token, status: 'PENDING' }]);
      expect(await task(id, first.key)).toMatchObject({ status: 'PENDING', attempts: 0, nextRunAt: now + 100 });
      const second = await claimOne(id, now + 100);
      expect(second).toMatchObject({ attempt: 2, counted: 1, busySince: now });
      await h.store.settle([ending(second, 'BUSY', now + 110, { retryAt: now + 200 })]);
      const third = await claimOne(id, now + 200);
      expect(third).toMatchObject({ attempt: 3, counted: 1, busySince: now });
      // A failure ends the streak (and, out of budget, the task).
      expect(await h.store.settle([ending(third, 'FAILED', now + 210, { retryAt: now + 300 })])).toEqual([{ token: third.token, status: 'FAILED' }]);
      expect((await h.store.attemptsOf(third.id)).map((a) => [a.attempt, a.outcome])).toEqual([
        [1, 'BUSY'],
        [2, 'BUSY'],
        [3, 'FAILED'],
      ]);
      await h.store.retryFailed({ batchId: id });
      expect((await claimOne(id, now + 400)).busySince).toBeNull();
    });

    it('a lost attempt ends the busy streak', async () => {
      const id = await setup(1);
      const now = Date.now();
      const t = await claimOne(id, now);
      await h.store.settle([ending(t, 'BUSY', now + 10, { retryAt: now + 20 })]);
      await claimOne(id, now + 20, { owner: 'dead-owner', leaseMs: 1 });
      await h.store.releaseStale(id, now + 1000, ['dead-owner'], 'self');
      expect((await claimOne(id, now + 2000)).busySince).toBeNull();
    });

    it('a task cancel asked to stop ends CANCELLED on a busy answer', async () => {
      const id = await setup(1);
      const now = Date.now();
      const t = await claimOne(id, now);
      await h.store.cancel({ batchId: id });
      expect(await h.store.settle([ending(t, 'BUSY', now + 10, { retryAt: now + 100 })])).toEqual([{ token: t.token, status: 'CANCELLED' }]);
    });
  });
}

/** The TaskStore contract, --rate (SPEC §10): the batch's gate in the store, shared by every coordinator. */
export function rateContract(h: Harness): void {
  describe('rate gate', () => {
    it('grants starts period / N apart, at most a burst after an idle spell, and says when the next may start', async () => {
      const id = await h.setup(1);
      const t = Date.now();
      const take = (want: number, at: number) => h.store.takeStarts(id, want, at, 50, 2);
      expect(await take(3, t)).toEqual({ granted: 1, wakeAt: t + 50 });
      expect(await take(3, t + 10)).toEqual({ granted: 0, wakeAt: t + 50 });
      expect(await take(3, t + 50)).toEqual({ granted: 1, wakeAt: t + 100 });
      // Idle for a second: two at once (the burst), not twenty.
      expect(await take(30, t + 1050)).toEqual({ granted: 2, wakeAt: t + 1100 });
      // Another batch has its own gate.
      const other = await h.setup(1, { name: 'other' });
      expect((await h.store.takeStarts(other, 1, t + 1050, 50, 2)).granted).toBe(1);
    });
  });

  describe('rate keys', () => {
    /** Tasks a1 a2 b1 b2 (claimed in that order), keyed A A B B. */
    async function keyed(): Promise<number> {
      const specs = ['a1', 'a2', 'b1', 'b2'].map((k) => ({ ...spec(k), rateKey: k[0]!.toUpperCase() }));
      return (await h.store.enqueue(newBatch('keyed'), specs)).batch.id;
    }
    const claimKeyed = (id: number, now: number, slots: number, spacingMs = 1000, burst = 1) =>
      h.store.claim({ batchId: id, owner: 'owner-A', host: HOST, now, leaseMs: LEASE_MS, slots: Array.from({ length: slots }, (_, i) => ({ workerId: `w${i + 1}`, pid: 1000 + i })), keyed: { spacingMs, burst } });

    it('a keyed claim takes a task only from a key whose gate is open, and moves that gate; says when the next opens', async () => {
      const id = await keyed();
      const t = Date.now() + 3_600_000; // ahead of the clock: a keyed claim judges gates no earlier than now
      expect((await claimKeyed(id, t, 4)).map((c) => c.key)).toEqual(['a1', 'b1']);
      expect(await claimKeyed(id, t + 10, 4)).toEqual([]);
      expect(await h.store.keyGateOpensAt(id, t + 10)).toBe(t + 1000);
      expect((await claimKeyed(id, t + 1000, 4)).map((c) => c.key)).toEqual(['a2', 'b2']);
    });

    it("a gate left behind by an idle spell lets its key take a burst's worth of places in one claim; the gates are the batch's own", async () => {
      const id = await keyed();
      const other = (await h.store.enqueue(newBatch('keyed-other'), ['x1', 'x2', 'x3'].map((k) => ({ ...spec(k), rateKey: 'A' })))).batch.id;
      const t = Date.now() + 3_600_000; // ahead of the clock: a keyed claim judges gates no earlier than now
      expect((await claimKeyed(id, t, 1)).map((c) => c.key)).toEqual(['a1']);
      // Batch `keyed`'s gate A is closed; the other batch's A is its own.
      expect((await claimKeyed(other, t, 1)).map((c) => c.key)).toEqual(['x1']);
      // 10 ms apart, two at once: a gate idle since t lets two of its key start at t + 5000 (not
      // the 500 the spell would be worth); a new key's gate, one.
      expect((await claimKeyed(other, t + 5000, 4, 10, 2)).map((c) => c.key)).toEqual(['x2', 'x3']);
      expect((await claimKeyed(id, t + 5000, 4, 10, 2)).map((c) => c.key)).toEqual(['a2', 'b1']);
      expect(await h.store.keyGateOpensAt(id, t + 5000)).toBe(t + 5010);
      expect(await h.store.keyGateOpensAt(id, t + 5010)).toBeNull();
    });

    it("without keyed the keys limit nothing; a rerun's new keys re-key what waits; settleAndClaim claims keyed too", async () => {
      const id = await keyed();
      const t = Date.now() + 3_600_000; // ahead of the clock: a keyed claim judges gates no earlier than now
      const first = await h.claim(id, t, { slots: 1 });
      expect(first.map((c) => c.key)).toEqual(['a1']);
      // Every task under one key now: one start a second for the batch.
      await h.store.enqueue(newBatch('keyed'), ['a1', 'a2', 'b1', 'b2'].map((k) => ({ ...spec(k), rateKey: 'one' })), { rekey: true });
      const slots = [1, 2, 3].map((i) => ({ workerId: `w${i}`, pid: 1000 + i }));
      const req = { batchId: id, owner: 'owner-A', host: HOST, leaseMs: LEASE_MS, slots, keyed: { spacingMs: 1000, burst: 1 } };
      const done = await h.store.settleAndClaim([ending(first[0]!, 'SUCCESS', t + 5)], { ...req, now: t + 5 });
      expect(done.applied).toEqual([{ token: first[0]!.token, status: 'SUCCESS' }]);
      expect(done.claimed.map((c) => c.key)).toEqual(['a2']);
      expect((await h.store.settleAndClaim([], { ...req, now: t + 500 })).claimed).toEqual([]);
      expect((await h.store.settleAndClaim([], { ...req, now: t + 1005 })).claimed.map((c) => c.key)).toEqual(['b1']);
      // Unkeyed, the rest goes at once.
      expect((await h.claim(id, t + 1006, { slots: 3 })).map((c) => c.key)).toEqual(['b2']);
    });
  });

  describe('rate keys at a rerun', () => {
    const keyedSpecs = (keys: Record<string, string>, changed: string[] = []) =>
      Object.entries(keys).map(([k, rateKey]) => ({ ...spec(k), rateKey, ...(changed.includes(k) ? { fingerprint: 'changed' } : {}) }));
    const claimKeyed = (id: number, now: number) =>
      h.store.claim({ batchId: id, owner: 'owner-A', host: HOST, now, leaseMs: LEASE_MS, slots: [1, 2].map((i) => ({ workerId: `w${i}`, pid: i })), keyed: { spacingMs: 60_000, burst: 1 } });

    it('re-keys a failed task too (retry-failed runs it under its new key)', async () => {
      const id = (await h.store.enqueue(newBatch('rekey', 1), keyedSpecs({ a1: 'A', a2: 'B' }))).batch.id;
      const t = Date.now() + 3_600_000; // ahead of the clock: a keyed claim judges gates no earlier than now
      const [a1] = await h.claim(id, t);
      await h.store.settle([ending(a1!, 'FAILED', t + 1, { retryAt: null })]);
      await h.store.enqueue(newBatch('rekey', 1), keyedSpecs({ a1: 'same', a2: 'same' }), { rekey: true });
      await h.store.retryFailed({ batchId: id });
      // One key for both now: one start in its minute.
      expect(await claimKeyed(id, t + 10)).toHaveLength(1);
    });

    it('keeps the key of a changed list record it does not run (no --rerun-changed); without rekey, keys stay', async () => {
      const id = (await h.store.enqueue(newBatch('rekey-items'), keyedSpecs({ a1: 'K1', a2: 'K2', a3: 'K3' }), { itemPayloads: true })).batch.id;
      await h.store.enqueue(newBatch('rekey-items'), keyedSpecs({ a1: 'S', a2: 'S', a3: 'S' }, ['a2']), { itemPayloads: true, rekey: true });
      const t = Date.now() + 3_600_000; // ahead of the clock: a keyed claim judges gates no earlier than now
      // a1 under S; a2 still runs its old record, under K2: both start at once; a3 (S) waits.
      expect((await claimKeyed(id, t)).map((c) => c.key)).toEqual(['a1', 'a2']);
      const other = (await h.store.enqueue(newBatch('no-rekey'), keyedSpecs({ b1: 'K1', b2: 'K2' }))).batch.id;
      await h.store.enqueue(newBatch('no-rekey'), keyedSpecs({ b1: 'S', b2: 'S' }));
      expect(await claimKeyed(other, t)).toHaveLength(2);
    });
  });

  describe('--adaptive levels', () => {
    it('one row per owner, refreshed in place, read back highest first and only if fresh; null removes it; each batch its own', async () => {
      const id = await h.setup(1);
      const other = await h.setup(1, { name: 'other-levels' });
      const t = Date.now();
      await h.store.publishLevel(id, 'run-a', { level: 2, max: 8, pace: null }, t - 60_000);
      await h.store.publishLevel(id, 'run-b', { level: 3, max: 4, pace: 12.5 }, t);
      await h.store.publishLevel(other, 'run-a', { level: 1, max: 2, pace: null }, t);
      expect((await h.store.adaptiveLevels(id, t - 1000)).map((l) => [l.owner, l.level, l.max])).toEqual([['run-b', 3, 4]]);
      await h.store.publishLevel(id, 'run-a', { level: 5, max: 8, pace: null }, t);
      const fresh = await h.store.adaptiveLevels(id, t - 1000);
      expect(fresh.map((l) => [l.owner, l.level, l.max, l.pace])).toEqual([
        ['run-a', 5, 8, null],
        ['run-b', 3, 4, 12.5],
      ]);
      expect(Math.abs(fresh[0]!.updatedAt - t)).toBeLessThan(1000);
      await h.store.publishLevel(id, 'run-b', null, t);
      expect((await h.store.adaptiveLevels(id, 0)).map((l) => l.owner)).toEqual(['run-a']);
      expect((await h.store.adaptiveLevels(other, 0)).map((l) => l.level)).toEqual([1]);
    });
  });
}
