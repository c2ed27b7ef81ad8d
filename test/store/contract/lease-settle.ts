import { describe, expect, it } from 'vitest';
import type { Applied, ClaimedTask } from '../../../src/store/task-store.js';
import { HOST, LEASE_MS, ending, type Harness } from './harness.js';

/** The tokens of the applied settlements, sorted as `.sort()` sorts numbers (as text). */
const tokens = (applied: Applied[]) => applied.map((a) => a.token).sort();

/** The TaskStore contract, lease verbs: settling attempts, fencing, retries. */
export function settleContract(h: Harness): void {
  const { setup, claim, claimOne, task, countsAddUp } = h;
  describe('settle', () => {
    it('SUCCESS stores the result and closes the attempt', async () => {
      const id = await setup(2);
      const now = Date.now();
      const t = await claimOne(id, now);
      const s = ending(t, 'SUCCESS', now + 250, { durationMs: 250, result: '{"lines":42}', outputTail: 'done\n' });
      expect(await h.store.settle([s])).toEqual([{ token: t.token, status: 'SUCCESS' }]);
      const row = await task(id, t.key);
      expect(row).toMatchObject({ status: 'SUCCESS', result: '{"lines":42}', finishedAt: now + 250, attempts: 1, leaseOwner: null, leaseExpiresAt: null });
      const [a] = await h.store.attemptsOf(t.id);
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

    it('a success settled up to date says so (task and count) until a success that ran replaces it', async () => {
      const id = await setup(3);
      const now = Date.now();
      const [a, b] = await claim(id, now, { slots: 2 });
      const applied = await h.store.settle([
        { ...ending(a!, 'SUCCESS', now + 1, { result: '{"out":"/o/a"}' }), upToDate: true },
        ending(b!, 'SUCCESS', now + 1, { result: '{"out":"/o/b"}' }),
      ]);
      expect(tokens(applied)).toEqual([a!.token, b!.token].sort());
      expect(await task(id, a!.key)).toMatchObject({ status: 'SUCCESS', upToDate: true, result: '{"out":"/o/a"}' });
      expect(await task(id, b!.key)).toMatchObject({ status: 'SUCCESS', upToDate: false });
      expect(await h.store.upToDateCount(id)).toBe(1);
      // Not a success: never counted, whatever it carries.
      const c = await claimOne(id, now + 2);
      await h.store.settle([{ ...ending(c, 'FAILED', now + 3, { retryAt: null }), upToDate: true }]);
      expect(await task(id, c.key)).toMatchObject({ status: 'FAILED', upToDate: false });
      expect(await h.store.upToDateCount(id)).toBe(1);
    });

    it("returns each applied settlement's task status as its commit left it, in the order given (the coordinator reads no status back)", async () => {
      const id = await setup(7, { maxAttempts: 2 });
      const now = Date.now();
      const [ok, retried, permanent, interrupted, cancelled] = await claim(id, now, { slots: 5 });
      // stale: its lease lapsed and another owner holds the task now.
      const stale = await claimOne(id, now, { owner: 'owner-C', leaseMs: 1000 });
      await h.store.releaseStale(id, now + 2000, [], 'owner-B');
      const fresh = await claimOne(id, now + 2000, { owner: 'owner-B' });
      expect(fresh.key).toBe(stale.key);
      expect(await h.store.cancel({ batchId: id, keyMatches: (k) => k === cancelled!.key })).toMatchObject({ stopping: 1 });
      const applied = await h.store.settle([
        ending(retried!, 'FAILED', now + 1, { retryAt: now + 50 }),
        ending(ok!, 'SUCCESS', now + 1),
        ending(stale, 'SUCCESS', now + 1),
        ending(permanent!, 'FAILED', now + 1, { retryAt: null }),
        ending(interrupted!, 'INTERRUPTED', now + 1),
        ending(cancelled!, 'FAILED', now + 1, { retryAt: now + 50 }),
      ]);
      expect(applied).toEqual([
        { token: retried!.token, status: 'PENDING' },
        { token: ok!.token, status: 'SUCCESS' },
        { token: permanent!.token, status: 'FAILED' },
        { token: interrupted!.token, status: 'PENDING' },
        { token: cancelled!.token, status: 'CANCELLED' },
      ]);
      for (const t of [retried!, ok!, permanent!, interrupted!, cancelled!]) {
        expect((await task(id, t.key)).status).toBe(applied.find((a) => a.token === t.token)!.status);
      }
      // The same from a tick's transaction: a failure out of attempts beside a success, then
      // successes alone (on PostgreSQL, one statement).
      const again = await claimOne(id, now + 100);
      const request = (at: number) => ({ batchId: id, owner: 'owner-A', host: HOST, now: at, leaseMs: LEASE_MS, slots: [{ workerId: 'w1', pid: 1 }] });
      const tick = await h.store.settleAndClaim([ending(again, 'FAILED', now + 101, { retryAt: null }), ending(fresh, 'SUCCESS', now + 101)], { ...request(now + 102), owner: 'owner-B' });
      expect(tick.applied).toEqual([{ token: again.token, status: 'FAILED' }, { token: fresh.token, status: 'SUCCESS' }]);
      const last = tick.claimed[0]!;
      const end = await h.store.settleAndClaim([ending(last, 'SUCCESS', now + 103)], { ...request(now + 104), owner: 'owner-B', slots: [] });
      expect(end).toEqual({ applied: [{ token: last.token, status: 'SUCCESS' }], claimed: [] });
    });

    it('commits nothing for an empty list', async () => {
      expect(await h.store.settle([])).toEqual([]);
    });

    it('ignores a second settlement of the same attempt', async () => {
      const id = await setup(1);
      const now = Date.now();
      const t = await claimOne(id, now);
      expect(await h.store.settle([ending(t, 'SUCCESS', now + 1, { result: '1' })])).toEqual([{ token: t.token, status: 'SUCCESS' }]);
      expect(await h.store.settle([ending(t, 'FAILED', now + 2, { retryAt: now + 3 })])).toEqual([]);
      expect(await task(id, t.key)).toMatchObject({ status: 'SUCCESS', result: '1', attempts: 1 });
      expect((await h.store.attemptsOf(t.id))[0]).toMatchObject({ outcome: 'SUCCESS', endedAt: now + 1 });
    });

    it('fences off a stale token once the task was released and claimed again', async () => {
      const id = await setup(1);
      const now = Date.now();
      const stale = await claimOne(id, now, { owner: 'owner-A', leaseMs: 1000 });
      expect(await h.store.releaseStale(id, now + 2000, [], 'owner-B')).toHaveLength(1);
      const fresh = await claimOne(id, now + 2000, { owner: 'owner-B' });
      expect(fresh.token).not.toBe(stale.token);
      expect(fresh.attempt).toBe(2);

      const applied = await h.store.settle([
        ending(stale, 'SUCCESS', now + 2100, { result: '"stale"' }),
        ending(stale, 'FAILED', now + 2100, { retryAt: null }),
      ]);
      expect(applied).toEqual([]);
      expect(await task(id, stale.key)).toMatchObject({ status: 'RUNNING', leaseOwner: 'owner-B', result: null, attempts: 2 });
      const attempts = await h.store.attemptsOf(stale.id);
      expect(attempts.map((a) => a.outcome)).toEqual(['LOST', null]);

      expect(await h.store.settle([ending(fresh, 'SUCCESS', now + 2200, { result: '"fresh"' })])).toEqual([{ token: fresh.token, status: 'SUCCESS' }]);
      expect(await task(id, stale.key)).toMatchObject({ status: 'SUCCESS', result: '"fresh"' });
      expect((await h.store.attemptsOf(stale.id)).map((a) => a.outcome)).toEqual(['LOST', 'SUCCESS']);
    });

    it('a LOST attempt ends unknown (NULL), never at the takeover time; its late fenced report fills in its real end once, outcome LOST', async () => {
      const id = await setup(1);
      const now = Date.now();
      const stale = await claimOne(id, now, { owner: 'owner-A', leaseMs: 1000 });
      await h.store.releaseStale(id, now + 2000, [], 'owner-B');
      const fresh = await claimOne(id, now + 2000, { owner: 'owner-B' });
      const [lost] = await h.store.attemptsOf(stale.id);
      expect(lost).toMatchObject({ outcome: 'LOST', endedAt: null, durationMs: null, exitCode: null, signal: null });
      expect(lost!.error).toMatch(/^LOST: the lease of owner-A expired/);

      // The frozen owner resumes: its command had ended at now + 1500 (before the takeover, unseen).
      const late = ending(stale, 'CRASHED', now + 1500, { durationMs: 1500, exitCode: null, signal: 'SIGKILL', error: 'CRASHED: worker killed by SIGKILL', retryAt: now + 1600 });
      expect(await h.store.settle([late])).toEqual([]);
      const [filled, running] = await h.store.attemptsOf(stale.id);
      expect(filled).toMatchObject({ outcome: 'LOST', endedAt: now + 1500, durationMs: 1500, signal: 'SIGKILL', logPath: `/logs/${stale.key}.log` });
      expect(filled!.error).toBe(`${lost!.error}; its owner reported later, fenced off: CRASHED: worker killed by SIGKILL`);
      expect(running).toMatchObject({ outcome: null, endedAt: null });
      expect(await task(id, stale.key)).toMatchObject({ status: 'RUNNING', leaseOwner: 'owner-B', attempts: 2 });

      // Once only: a second late report changes nothing; the fresh attempt settles as usual.
      expect(await h.store.settle([ending(stale, 'SUCCESS', now + 9000, { result: '"stale"' })])).toEqual([]);
      expect((await h.store.attemptsOf(stale.id))[0]).toEqual(filled);
      expect(await h.store.settle([ending(fresh, 'SUCCESS', now + 2200, { result: '"fresh"' })])).toEqual([{ token: fresh.token, status: 'SUCCESS' }]);
      expect((await h.store.attemptsOf(stale.id)).map((a) => [a.outcome, a.endedAt])).toEqual([
        ['LOST', now + 1500],
        ['SUCCESS', now + 2200],
      ]);
    });

    it('a late fenced success (grouped with others) fills in the LOST end too', async () => {
      const id = await setup(2);
      const now = Date.now();
      const [stale, other] = await claim(id, now, { owner: 'owner-A', slots: 2, leaseMs: 1000 });
      await h.store.releaseStale(id, now + 2000, [], 'owner-B');
      // Both lost; the first reports a success later, alone in a group of successes.
      expect(await h.store.settle([ending(stale!, 'SUCCESS', now + 2500, { result: '"late"', durationMs: 2500 })])).toEqual([]);
      const [a] = await h.store.attemptsOf(stale!.id);
      expect(a).toMatchObject({ outcome: 'LOST', endedAt: now + 2500, durationMs: 2500, exitCode: 0 });
      expect(a!.error).toMatch(/; its owner reported later, fenced off: SUCCESS \(result discarded\)$/);
      expect(await task(id, stale!.key)).toMatchObject({ status: 'PENDING', result: null });
      expect((await h.store.attemptsOf(other!.id))[0]).toMatchObject({ outcome: 'LOST', endedAt: null });
    });

    it('fences off a token whose task was released but not claimed again', async () => {
      const id = await setup(1);
      const now = Date.now();
      const stale = await claimOne(id, now, { leaseMs: 10 });
      await h.store.releaseStale(id, now + 100, [], 'someone-else');
      expect(await h.store.settle([ending(stale, 'SUCCESS', now + 200, { result: '1' })])).toEqual([]);
      expect(await task(id, stale.key)).toMatchObject({ status: 'PENDING', result: null, attempts: 1 });
    });

    it('returns only the tokens that still held their task', async () => {
      const id = await setup(3);
      const now = Date.now();
      const [a, b, c] = await claim(id, now, { owner: 'owner-A', slots: 3, leaseMs: 1000 });
      await h.store.heartbeat('owner-A', now + 10_000);
      await h.store.settle([ending(b!, 'SUCCESS', now + 1)]);
      const applied = await h.store.settle([
        ending(a!, 'SUCCESS', now + 2),
        ending(b!, 'SUCCESS', now + 2),
        ending(c!, 'FAILED', now + 2, { retryAt: now + 100 }),
      ]);
      expect(tokens(applied)).toEqual([a!.token, c!.token].sort());
    });

    it('commits a group of successes row by row: each its own result and attempt fields, stale ones fenced', async () => {
      const id = await setup(4);
      const now = Date.now();
      const [a, b, c, d] = await claim(id, now, { owner: 'owner-A', slots: 4, leaseMs: 1000 });
      const attemptOf = async (t: ClaimedTask) => (await h.store.attemptsOf(t.id))[0];
      expect((await Promise.all([a, b, c, d].map((t) => attemptOf(t!)))).map((x) => [x!.workerId, x!.pid])).toEqual([
        ['w1', 1000],
        ['w2', 1001],
        ['w3', 1002],
        ['w4', 1003],
      ]);
      // c goes back unstarted and owner-B claims it again: owner-A's success for c must not land.
      await h.store.settle([ending(c!, 'INTERRUPTED', now + 1)]);
      const again = await claimOne(id, now + 2, { owner: 'owner-B' });
      expect(again.key).toBe(c!.key);
      const weird = '"quote \\" ü 😀 \\n tab\\t"';
      const applied = await h.store.settle([
        ending(a!, 'SUCCESS', now + 10, { result: weird, durationMs: 3, outputTail: 'a out', startedAt: now + 5 }),
        ending(b!, 'SUCCESS', now + 11, { result: null, exitCode: 0, outputTail: null, logPath: null }),
        ending(c!, 'SUCCESS', now + 12, { result: '"stale"' }),
        ending(d!, 'SUCCESS', now + 13, { result: JSON.stringify('x'.repeat(100_000)) }),
      ]);
      expect(tokens(applied)).toEqual([a!.token, b!.token, d!.token].sort());
      expect(await task(id, a!.key)).toMatchObject({ status: 'SUCCESS', result: weird, finishedAt: now + 10 });
      expect(await task(id, b!.key)).toMatchObject({ status: 'SUCCESS', result: null, finishedAt: now + 11 });
      expect(await task(id, c!.key)).toMatchObject({ status: 'RUNNING', leaseOwner: 'owner-B', result: null });
      expect((await task(id, d!.key)).result).toHaveLength(100_002);
      expect(await attemptOf(a!)).toMatchObject({ outcome: 'SUCCESS', startedAt: now + 5, endedAt: now + 10, durationMs: 3, outputTail: 'a out' });
      expect(await attemptOf(b!)).toMatchObject({ outcome: 'SUCCESS', startedAt: now, endedAt: now + 11, outputTail: null, logPath: null });
      expect((await h.store.attemptsOf(c!.id)).map((x) => [x.outcome, x.workerId])).toEqual([
        ['INTERRUPTED', 'w3'],
        [null, 'w1'],
      ]);
    });

    it('a task listed twice in one group: only the settlement whose token holds it lands', async () => {
      const id = await setup(1);
      const now = Date.now();
      const stale = await claimOne(id, now, { owner: 'owner-A', leaseMs: 1000 });
      await h.store.releaseStale(id, now + 2000, [], 'owner-B');
      const fresh = await claimOne(id, now + 2000, { owner: 'owner-B' });
      const applied = await h.store.settle([
        ending(fresh, 'SUCCESS', now + 2100, { result: '"fresh"' }),
        ending(stale, 'SUCCESS', now + 2100, { result: '"stale"' }),
      ]);
      expect(applied).toEqual([{ token: fresh.token, status: 'SUCCESS' }]);
      expect(await task(id, fresh.key)).toMatchObject({ status: 'SUCCESS', result: '"fresh"' });
      expect((await h.store.attemptsOf(fresh.id)).map((a) => a.outcome)).toEqual(['LOST', 'SUCCESS']);
    });

    it('settleAndClaim of successes alone (PostgreSQL: one statement) does all a tick does: late reports, starts, the batch mark, the version guard', async () => {
      const id = await setup(6, { name: 'at-once' });
      const now = Date.now();
      const { jobVersion } = (await h.store.findBatch('at-once'))!;
      expect(await h.store.activity(id)).toMatchObject({ firstStartedAt: null, lastFinishedAt: null });
      // A lost attempt (owner-A's lease lapsed) whose success comes in late, fenced off.
      const [stale] = await claim(id, now, { owner: 'owner-A', leaseMs: 1000 });
      expect(await h.store.activity(id)).toMatchObject({ firstStartedAt: now });
      await h.store.releaseStale(id, now + 2000, [], 'owner-B');
      // owner-B: one running attempt and two queued behind it on the same worker.
      const slot = (workerId: string, queued: boolean) => ({ workerId, pid: 7, queued });
      const request = (at: number, slots: ReturnType<typeof slot>[], extra: object = {}) => ({ batchId: id, owner: 'owner-B', host: HOST, now: at, leaseMs: LEASE_MS, slots, ...extra });
      const [p, q, r] = (await h.store.settleAndClaim([], request(now + 2000, [slot('w1', false), slot('w1', true), slot('w1', true)]))).claimed;
      // The task the lapsed lease gave back is due since the takeover: a retry, claimed before the never-tried ones.
      expect([p, q, r].map((t) => [t!.key, t!.attempt])).toEqual([[stale!.key, 2], ['k001', 1], ['k002', 1]]);
      expect(await countsAddUp(id)).toMatchObject({ running: 1, queued: 2 });

      // One tick: the late success, p's success, q's start and success, r's start; a free slot.
      const tick = await h.store.settleAndClaim(
        [
          ending(stale!, 'SUCCESS', now + 1500, { result: '"late"', durationMs: 1500 }),
          ending(p!, 'SUCCESS', now + 2004, { result: '"p"' }),
          ending(q!, 'SUCCESS', now + 2008, { result: '"q"', startedAt: now + 2005 }),
        ],
        request(now + 2010, [slot('w2', false)], {
          jobVersion,
          started: [
            { taskId: q!.id, token: q!.token, at: now + 2005 },
            { taskId: r!.id, token: r!.token, at: now + 2009 },
          ],
        }),
      );
      expect(tokens(tick.applied)).toEqual([p!.token, q!.token].sort());
      expect(tick.claimed.map((t) => [t.key, t.workerId, t.attempt])).toEqual([['k003', 'w2', 1]]);
      const [lost] = await h.store.attemptsOf(stale!.id);
      expect(lost).toMatchObject({ outcome: 'LOST', endedAt: now + 1500, durationMs: 1500 });
      expect(lost!.error).toMatch(/; its owner reported later, fenced off: SUCCESS \(result discarded\)$/);
      // The task's result is its second attempt's (p), never the fenced-off late one's.
      expect(await task(id, p!.key)).toMatchObject({ status: 'SUCCESS', result: '"p"', finishedAt: now + 2004 });
      expect(await task(id, q!.key)).toMatchObject({ status: 'SUCCESS', result: '"q"', startedAt: now + 2005 });
      expect(await task(id, r!.key)).toMatchObject({ status: 'RUNNING', startedAt: now + 2009 });
      expect((await h.store.attemptsOf(tick.claimed[0]!.id)).map((a) => [a.outcome, a.workerId])).toEqual([[null, 'w2']]);
      expect(await countsAddUp(id)).toMatchObject({ succeeded: 2, running: 2, queued: 0, pending: 2, retrying: 0 });
      expect((await h.store.activity(id)).lastFinishedAt).toBe(now + 2008);

      // Under another job version: the successes commit, nothing is claimed.
      const other = await h.store.settleAndClaim([ending(r!, 'SUCCESS', now + 2020)], request(now + 2020, [slot('w1', false)], { jobVersion: jobVersion + 1 }));
      expect(other).toEqual({ applied: [{ token: r!.token, status: 'SUCCESS' }], claimed: [] });
      expect(await task(id, r!.key)).toMatchObject({ status: 'SUCCESS' });
      const same = await h.store.settleAndClaim([], request(now + 2021, [slot('w1', false)], { jobVersion }));
      expect(same.claimed.map((t) => t.key)).toEqual(['k004']);
      expect(await countsAddUp(id)).toMatchObject({ succeeded: 3, running: 2, pending: 1, retrying: 0 });
    });

    it('settleAndClaim commits the finished attempts, then claims for the free slots', async () => {
      const id = await setup(3, { maxAttempts: 3 });
      const now = Date.now();
      const [a, b] = await claim(id, now, { slots: 2 });
      const slots = [1, 2, 3].map((i) => ({ workerId: `w${i}`, pid: i }));
      const request = (at: number) => ({ batchId: id, owner: 'owner-A', host: HOST, now: at, leaseMs: LEASE_MS, slots });
      const tick = await h.store.settleAndClaim(
        [ending(a!, 'SUCCESS', now + 1, { result: '"a"' }), ending(b!, 'FAILED', now + 1, { retryAt: now + 2 })],
        request(now + 2),
      );
      expect(tokens(tick.applied)).toEqual([a!.token, b!.token].sort());
      // The task that just failed is due again and claimed in the same tick, before the never-tried one.
      expect(tick.claimed.map((t) => [t.key, t.attempt, t.workerId])).toEqual([
        [b!.key, 2, 'w1'],
        ['k002', 1, 'w2'],
      ]);
      expect(await task(id, a!.key)).toMatchObject({ status: 'SUCCESS', result: '"a"' });
      expect((await h.store.attemptsOf(b!.id)).map((x) => x.outcome)).toEqual(['FAILED', null]);

      // A stale settlement is fenced off; the claim still happens; nothing to do is nothing.
      const again = await h.store.settleAndClaim([ending(a!, 'FAILED', now + 3, { retryAt: null })], request(now + 3));
      expect(again).toEqual({ applied: [], claimed: [] });
      expect(await task(id, a!.key)).toMatchObject({ status: 'SUCCESS' });
      expect(await h.store.settleAndClaim([], { ...request(now + 3), slots: [] })).toEqual({ applied: [], claimed: [] });
      const last = await h.store.settleAndClaim(tick.claimed.map((t) => ending(t, 'SUCCESS', now + 4)), { ...request(now + 4), slots: [] });
      expect(tokens(last.applied)).toEqual(tick.claimed.map((t) => t.token).sort());
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
        expect(tokens(await h.store.settle([s]))).toEqual([t.token]);
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
      const attempts = await h.store.attemptsOf((await task(id, 'k000')).id);
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
      await h.store.settle([ending(t, 'FAILED', now + 1, { error: 'PermanentError: bad input', retryAt: null })]);
      expect(await task(id, t.key)).toMatchObject({ status: 'FAILED', attempts: 1, lastError: 'PermanentError: bad input', finishedAt: now + 1 });
      expect(await countsAddUp(id)).toMatchObject({ failed: 1, retrying: 0, pending: 0 });
    });

    it('TIMEOUT and CRASHED are retried like any failure and recorded as such', async () => {
      const id = await setup(1, { maxAttempts: 3 });
      const now = Date.now();
      const a = await claimOne(id, now);
      await h.store.settle([ending(a, 'TIMEOUT', now + 1, { exitCode: null, signal: 'SIGKILL', retryAt: now + 2 })]);
      const b = await claimOne(id, now + 2);
      await h.store.settle([ending(b, 'CRASHED', now + 3, { exitCode: null, signal: 'SIGSEGV', retryAt: now + 4 })]);
      expect(await task(id, a.key)).toMatchObject({ status: 'PENDING', attempts: 2 });
      const attempts = await h.store.attemptsOf(a.id);
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
        expect(tokens(await h.store.settle([s]))).toEqual([t.token]);
        expect(await task(id, t.key)).toMatchObject({ status: 'PENDING', attempts: 0, leaseOwner: null });
        expect(await countsAddUp(id)).toMatchObject({ pending: 1, retrying: 0, running: 0 });
      }
      const attempts = await h.store.attemptsOf((await task(id, 'k000')).id);
      expect(attempts.map((a) => a.outcome)).toEqual(['INTERRUPTED', 'INTERRUPTED', 'INTERRUPTED']);
      // Still the whole budget left: the next real failure fails the task (maxAttempts 1).
      const t = await claimOne(id, now + 100);
      await h.store.settle([ending(t, 'FAILED', now + 101, { retryAt: now + 200 })]);
      expect(await task(id, t.key)).toMatchObject({ status: 'FAILED', attempts: 1 });
    });

    it('INTERRUPTED keeps the attempts charged before it', async () => {
      const id = await setup(1, { maxAttempts: 3 });
      const now = Date.now();
      const a = await claimOne(id, now);
      await h.store.settle([ending(a, 'FAILED', now + 1, { retryAt: now + 2 })]);
      const b = await claimOne(id, now + 2);
      await h.store.settle([ending(b, 'INTERRUPTED', now + 3)]);
      expect(await task(id, a.key)).toMatchObject({ status: 'PENDING', attempts: 1 });
      expect(await countsAddUp(id)).toMatchObject({ retrying: 1 });
    });
  });
}
