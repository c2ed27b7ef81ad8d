import { describe, expect, it } from 'vitest';
import type { ClaimedTask } from '../../../src/store/task-store.js';
import { HOST, LEASE_MS, spec, keys, ending, type Harness } from './harness.js';

/** The TaskStore contract, lease verbs: claiming, and taking leases back (releaseStale, heartbeat). */
export function claimContract(h: Harness): void {
  const { setup, claim, claimOne, task, countsAddUp } = h;
  const owners = async (batchId: number | null, now: number) => (await h.store.runningOwners(batchId, now)).map((o) => o.owner);
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
      expect(await h.store.claim({ batchId: id, owner: 'o', host: HOST, now: Date.now(), leaseMs: LEASE_MS, slots: [] })).toEqual([]);
      expect((await h.store.counts(id)).pending).toBe(2);
    });

    it('opens an attempt row for the claim', async () => {
      const id = await setup(1);
      const now = Date.now();
      const t = await claimOne(id, now);
      const attempts = await h.store.attemptsOf(t.id);
      expect(attempts).toHaveLength(1);
      expect(attempts[0]).toMatchObject({ attempt: 1, workerId: 'w1', host: HOST, pid: 1000, startedAt: now, endedAt: null, outcome: null });
    });

    it('never returns a task that is RUNNING', async () => {
      const id = await setup(10);
      const now = Date.now();
      const seen: string[] = [];
      for (let i = 0; i < 15; i++) seen.push(...(await claim(id, now + i, { owner: i % 2 ? 'owner-A' : 'owner-B' })).map((t) => t.key));
      expect(seen).toEqual(keys(10));
      expect((await h.store.counts(id)).running).toBe(10);
    });

    it('only claims from the batch asked for', async () => {
      const a = await setup(2, { name: 'a' });
      const b = await setup(2, { name: 'b' });
      const got = await claim(b, Date.now(), { slots: 5 });
      expect(got).toHaveLength(2);
      for (const t of got) expect(await task(b, t.key)).toMatchObject({ status: 'RUNNING' });
      expect((await h.store.counts(a)).pending).toBe(2);
    });

    it('does not claim a task before its next_run_at', async () => {
      const id = await setup(2);
      const now = Date.now();
      const first = await claimOne(id, now);
      expect(await h.store.settle([ending(first, 'FAILED', now + 10, { retryAt: now + 1000 })])).toEqual([{ token: first.token, status: 'PENDING' }]);
      expect(await task(id, first.key)).toMatchObject({ status: 'PENDING', nextRunAt: now + 1000 });
      // The other task is due; the delayed one is skipped.
      const other = await claimOne(id, now + 20);
      expect(other.key).not.toBe(first.key);
      expect(await claim(id, now + 500)).toEqual([]);
      expect(await claim(id, now + 999)).toEqual([]);
      const again = await claimOne(id, now + 1000);
      expect(again).toMatchObject({ key: first.key, attempt: 2 });
    });

    it('claims a due retry (failed with a backoff, or released as lost) before never-tried tasks, earliest due first; new ones stay in key order', async () => {
      const id = await setup(12, { maxAttempts: 3 });
      const t0 = Date.now();
      const [failed, lost, late, early] = await claim(id, t0, { owner: 'owner-A', slots: 4, leaseMs: 50 });
      const retryAt = (t: ClaimedTask, at: number) => ending(t, 'FAILED', t0 + 10, { retryAt: at });
      await h.store.settle([retryAt(failed!, t0 + 100), retryAt(late!, t0 + 300), retryAt(early!, t0 + 200)]);
      // owner-A stopped answering: its lease ran out and the task is released, due at once.
      expect((await h.store.releaseStale(id, t0 + 60, [], 'owner-B')).map((r) => r.key)).toEqual([lost!.key]);
      // Eight never-tried tasks wait; the released one goes first, the failure is not due yet.
      expect((await claim(id, t0 + 70, { slots: 3 })).map((t) => t.key)).toEqual([lost!.key, 'k004', 'k005']);
      expect((await claim(id, t0 + 100, { slots: 2 })).map((t) => [t.key, t.attempt])).toEqual([[failed!.key, 2], ['k006', 1]]);
      expect((await claim(id, t0 + 300, { slots: 3 })).map((t) => t.key)).toEqual([early!.key, late!.key, 'k007']);
      expect((await claim(id, t0 + 300, { slots: 9 })).map((t) => t.key)).toEqual(['k008', 'k009', 'k010', 'k011']);
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
        expect((await h.store.settle(settlements)).map((a) => a.token).sort()).toEqual(settlements.map((s) => s.token).sort());
        for (const t of previous) held.delete(t.id);
        previous = [...a, ...b];
        if (previous.length === 0 && (await h.store.nextDueAt(id)) === null) break;
      }
      const c = await countsAddUp(id);
      expect(c.succeeded + c.failed).toBe(n);
      expect(claims).toBeGreaterThan(n);
      // No two attempts of one task ever overlapped.
      for (const t of await h.store.listTasks({ batchId: id })) {
        const attempts = await h.store.attemptsOf(t.id);
        expect(attempts.map((x) => x.attempt)).toEqual(attempts.map((_, i) => i + 1));
        for (let i = 1; i < attempts.length; i++) expect(attempts[i]!.startedAt).toBeGreaterThanOrEqual(attempts[i - 1]!.endedAt!);
      }
    });
  });

  describe('releaseStale and heartbeat', () => {
    it('returns a task whose lease expired to PENDING and records the attempt LOST', async () => {
      const id = await setup(2);
      const now = Date.now();
      const t = await claimOne(id, now, { owner: 'owner-A', leaseMs: 1000 });
      expect(await h.store.releaseStale(id, now + 500, [], 'owner-B')).toEqual([]);
      const released = await h.store.releaseStale(id, now + 1500, [], 'owner-B');
      // With what renders its declared output's temporary path: the lost attempt, stage, seq and payload.
      expect(released).toEqual([{ key: t.key, owner: 'owner-A', failed: false, token: t.token, stage: t.stage, seq: t.seq, payload: t.payload, inputs: {} }]);
      expect(await task(id, t.key)).toMatchObject({ status: 'PENDING', attempts: 1, leaseOwner: null });
      const [a] = await h.store.attemptsOf(t.id);
      expect(a).toMatchObject({ outcome: 'LOST', endedAt: null, durationMs: null });
      expect(await countsAddUp(id)).toMatchObject({ retrying: 1, pending: 1, running: 0 });
      // Released work is claimable at once and the lost attempt stays counted.
      const all = await claim(id, now + 1500, { slots: 2 });
      expect(all.find((x) => x.key === t.key)?.attempt).toBe(2);
    });

    it('tells beforeRelease the attempts it is about to record LOST, inside the release: a hook that throws leaves them RUNNING', async () => {
      const id = await setup(3);
      const now = Date.now();
      const dead = await claim(id, now, { owner: 'host:1:dead', slots: 2 });
      const told: unknown[] = [];
      await expect(
        h.store.releaseStale(id, now + 1, ['host:1:dead'], 'host:3:self', [], (lost) => {
          told.push(...lost);
          throw new Error('crashed while cleaning up');
        }),
      ).rejects.toThrow(/crashed while cleaning up/);
      const expected = dead.map((t) => ({ key: t.key, owner: 'host:1:dead', token: t.token, stage: t.stage, seq: t.seq, payload: t.payload, inputs: {} }));
      expect(told).toEqual(expect.arrayContaining(expected));
      expect(told).toHaveLength(2);
      // Nothing was committed: the next recovery finds them and tells the hook again.
      for (const t of dead) expect(await task(id, t.key)).toMatchObject({ status: 'RUNNING', leaseOwner: 'host:1:dead' });
      const again: unknown[] = [];
      const released = await h.store.releaseStale(id, now + 1, ['host:1:dead'], 'host:3:self', [], (lost) => again.push(...lost));
      expect(again).toEqual(told);
      expect(released.map((r) => r.key).sort()).toEqual(dead.map((t) => t.key).sort());
      for (const t of dead) expect((await h.store.attemptsOf(t.id))[0]).toMatchObject({ outcome: 'LOST' });
    });

    it('releases the tasks of a dead owner even when their lease is fresh', async () => {
      const id = await setup(3);
      const now = Date.now();
      const dead = await claim(id, now, { owner: 'host:1:dead', slots: 2 });
      const alive = await claimOne(id, now, { owner: 'host:2:alive' });
      const released = await h.store.releaseStale(id, now + 1, ['host:1:dead'], 'host:3:self');
      expect(released.map((r) => r.key).sort()).toEqual(dead.map((t) => t.key).sort());
      expect(released.every((r) => r.owner === 'host:1:dead' && !r.failed)).toBe(true);
      for (const t of dead) expect((await h.store.attemptsOf(t.id))[0]).toMatchObject({ outcome: 'LOST' });
      expect(await task(id, alive.key)).toMatchObject({ status: 'RUNNING', leaseOwner: 'host:2:alive' });
      expect(await owners(id, now)).toEqual(['host:2:alive']);
    });

    it("never releases the caller's own tasks", async () => {
      const id = await setup(2);
      const now = Date.now();
      const mine = await claim(id, now, { owner: 'me', slots: 2, leaseMs: 10 });
      expect(await h.store.releaseStale(id, now + 60_000, ['me'], 'me')).toEqual([]);
      expect(await h.store.releaseStale(null, now + 60_000, ['me'], 'me')).toEqual([]);
      for (const t of mine) expect(await task(id, t.key)).toMatchObject({ status: 'RUNNING', leaseOwner: 'me' });
    });

    it('fails a released task that has no attempts left', async () => {
      const id = await setup(1, { maxAttempts: 1 });
      const now = Date.now();
      const t = await claimOne(id, now, { owner: 'owner-A', leaseMs: 10 });
      expect(await h.store.releaseStale(id, now + 100, [], 'owner-B')).toEqual([{ key: t.key, owner: 'owner-A', failed: true, token: t.token, stage: t.stage, seq: t.seq, payload: t.payload, inputs: {} }]);
      const row = await task(id, t.key);
      expect(row).toMatchObject({ status: 'FAILED', attempts: 1 });
      expect(row.finishedAt).not.toBeNull();
      expect(row.lastError).toBeTruthy();
      expect((await h.store.attemptsOf(t.id))[0]).toMatchObject({ outcome: 'LOST' });
      expect(await countsAddUp(id)).toMatchObject({ failed: 1, running: 0 });
      expect(await claim(id, now + 1000)).toEqual([]);
    });

    it('releases within one batch, or every batch for null', async () => {
      const a = await setup(1, { name: 'a' });
      const b = await setup(1, { name: 'b' });
      const now = Date.now();
      await claimOne(a, now, { owner: 'o', leaseMs: 10 });
      await claimOne(b, now, { owner: 'o', leaseMs: 10 });
      expect(await owners(null, now)).toEqual(['o']);
      expect(await h.store.releaseStale(a, now + 100, [], 'self')).toHaveLength(1);
      expect((await h.store.counts(b)).running).toBe(1);
      expect(await h.store.releaseStale(null, now + 100, [], 'self')).toHaveLength(1);
      expect((await h.store.counts(b)).running).toBe(0);
      expect(await owners(null, now)).toEqual([]);
    });

    it('lists the distinct owners holding RUNNING tasks', async () => {
      const a = await setup(4, { name: 'a' });
      const b = await setup(1, { name: 'b' });
      const now = Date.now();
      expect(await owners(a, now)).toEqual([]);
      await claim(a, now, { owner: 'o1', slots: 2 });
      await claim(a, now, { owner: 'o2', slots: 1 });
      await claim(b, now, { owner: 'o3', slots: 1 });
      expect((await owners(a, now)).sort()).toEqual(['o1', 'o2']);
      expect((await owners(null, now)).sort()).toEqual(['o1', 'o2', 'o3']);
    });

    it("gives each owner's latest lease end and whether it has passed: a heartbeat or a claim moves it (how recovery sees an owner renew)", async () => {
      const id = await setup(4);
      const now = Date.now();
      await claimOne(id, now, { owner: 'o1', leaseMs: 1000 });
      await claimOne(id, now + 200, { owner: 'o1', leaseMs: 1000 });
      await claimOne(id, now, { owner: 'o2', leaseMs: 5000 });
      const at = async (ms: number) => (await h.store.runningOwners(id, ms)).sort((x, y) => x.owner.localeCompare(y.owner));
      expect(await at(now + 1100)).toEqual([
        { owner: 'o1', leaseEnd: now + 1200, expired: false },
        { owner: 'o2', leaseEnd: now + 5000, expired: false },
      ]);
      expect(await at(now + 1300)).toEqual([
        { owner: 'o1', leaseEnd: now + 1200, expired: true },
        { owner: 'o2', leaseEnd: now + 5000, expired: false },
      ]);
      await h.store.heartbeat('o1', now + 9000);
      expect((await at(now + 1300))[0]).toEqual({ owner: 'o1', leaseEnd: now + 9000, expired: false });
    });

    it("heartbeat extends the owner's leases so recovery leaves them alone", async () => {
      const id = await setup(3);
      const now = Date.now();
      const mine = await claim(id, now, { owner: 'owner-A', slots: 2, leaseMs: 1000 });
      const theirs = await claimOne(id, now, { owner: 'owner-C', leaseMs: 1000 });
      await h.store.heartbeat('owner-A', now + 5000);
      for (const t of mine) expect(await task(id, t.key)).toMatchObject({ leaseExpiresAt: now + 5000 });
      expect(await task(id, theirs.key)).toMatchObject({ leaseExpiresAt: now + 1000 });
      const released = await h.store.releaseStale(id, now + 3000, [], 'owner-B');
      expect(released.map((r) => r.key)).toEqual([theirs.key]);
      expect(await h.store.releaseStale(id, now + 4999, [], 'owner-B')).toEqual([]);
      expect((await h.store.releaseStale(id, now + 6000, [], 'owner-B')).map((r) => r.key).sort()).toEqual(mine.map((t) => t.key).sort());
    });
  });
}
