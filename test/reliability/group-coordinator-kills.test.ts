import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, sleep, startCli, tempDir, waitFor } from '../helpers/cli.js';
import { overlaps } from '../helpers/attempt-overlaps.js';
import { batchHandler, callsIn, groupProject, releaseStopped, runningCalls } from '../helpers/group-runs.js';
import { processesWithEnv } from '../helpers/procs.js';
import { waitUntil } from '../helpers/json-views.js';
import { countsIn, succeededSoFar, tasksIn } from '../helpers/read-store.js';
import { countBy, dbPathIn, logEntries, sideEffects, storedAttempts } from '../helpers/store.js';
import { checkInvariants } from './invariants.js';

// A coordinator SIGKILLed while a group's call runs (SPEC §10: a lost group returns every item,
// like any lost attempt). Its items were claimed and leased together on the worker that runs
// them: the same command run again at once takes them back only once that worker is gone, so
// an item may run twice in all across the crash, never twice at once.

const TASKS = 400;
/** Each call sleeps this long, whatever its size: a kill a quarter into a call finds it running. */
const CALL_MS = 800;
const GROUP = 64; // the default bound of a batch export (SPEC §10)
const SLOTS = 2;
// What a coordinator holds when it dies: per slot its running group and one queued behind it
// (pool/slot-window.ts: one queued attempt for slow work, and a call of 800 ms is slow).
const HELD = SLOTS * 2 * GROUP;

/**
 * What is killed. A worker notices its coordinator's death within milliseconds and exits, long
 * before a new run has started: to see that the new run waits for it, the coordinator target
 * first stops (SIGSTOP) the workers running a call. A stopped worker is alive: the new run must
 * kill it before it runs its items, never run them beside it.
 */
const TARGETS = [
  { name: 'coordinator, its busy workers stopped', pid: (pid: number) => pid, stopWorkers: true },
  { name: 'process group', pid: (pid: number) => -pid, stopWorkers: false },
];

describe.each([batchHandler])('a coordinator killed mid-group, with $name', (work) => {
  it.each(TARGETS)('SIGKILL of the $name mid-call, then the same command at once: every task SUCCESS once, no item twice at once, nothing lost', async (target) => {
    const p = groupProject(TASKS);
    const env = { ...p.env, SLEEP_MS: String(CALL_MS) };
    const args = ['run', 'src', ...work.args, '-j', String(SLOTS), '--retries', '3'];
    const first = startCli(args, { cwd: p.dir, env, detached: true });
    // A call has ended (so the worker runs its next group) and one runs now; a quarter into it.
    await waitFor(() => callsIn(p.log).some((c) => c.ended) && runningCalls(p.log).length > 0, 30_000, 'a group mid-call after a first one ended');
    await sleep(CALL_MS / 4);
    const stopped = target.stopWorkers ? [...new Set(runningCalls(p.log).map((c) => c.pid))] : [];
    for (const pid of stopped) process.kill(pid, 'SIGSTOP');
    process.kill(target.pid(first.pid!), 'SIGKILL');
    expect((await first.result).signal).toBe('SIGKILL');
    const killed = runningCalls(p.log);
    expect(killed.length).toBeGreaterThan(0);

    // At once: the old workers may still live; the store must not hand their items out before they are gone.
    const again = startCli(args, { cwd: p.dir, env });
    if (stopped.length) {
      await releaseStopped(p.log, stopped, killed);
    }
    const r = await again.result;
    expect(r.code, r.stderr).toBe(0);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'nothing of either run alive');

    const tasks = await tasksIn(dbPathIn(p.dir));
    expect(tasks).toHaveLength(TASKS);
    expect(countBy(tasks, (t) => t.status)).toEqual(new Map([['SUCCESS', TASKS]]));
    expect(tasks.filter((t) => t.attempts < 1)).toEqual([]);
    expect(checkInvariants({ dbPath: dbPathIn(p.dir), keys: p.keys, retries: 3, logPath: p.log, kills: 1, concurrency: SLOTS, heldPerSlot: HELD / SLOTS })).toEqual([]);
    expect(overlaps(logEntries(p.log))).toEqual([]);

    // Every item of a killed call came back LOST and then succeeded; an item ran again only for a LOST attempt of its own.
    const attempts = await storedAttempts(dbPathIn(p.dir));
    const lost = new Set(attempts.filter((a) => a.outcome === 'LOST').map((a) => a.key));
    for (const key of killed.flatMap((c) => c.keys)) expect(lost.has(key), `${key} was in a killed call`).toBe(true);
    expect(lost.size).toBeLessThanOrEqual(HELD);
    expect(attempts.filter((a) => a.outcome === null || (a.outcome === 'LOST' && a.endedAt !== null))).toEqual([]);
    const ends = countBy(sideEffects(p.log), (e) => e.key);
    const starts = countBy(logEntries(p.log).filter((e) => e.type === 'start'), (e) => e.key);
    const wrong = p.keys.filter((k) => (lost.has(k) ? !(ends.get(k)! >= 1 && starts.get(k)! <= 2) : ends.get(k) !== 1 || starts.get(k) !== 1));
    expect(wrong).toEqual([]);
  });
});

describe('a coordinator killed amid fast groups', () => {
  it('charges each slot at most its running group and the next: what a crash leaves RUNNING is bounded by items, not places', async () => {
    // A slot holds about 4 ms of work, up to 64 attempts: counted in places, 64 fast groups of
    // 64 items held 4,096 tasks a slot, all charged (LOST) by a crash of the coordinator.
    const dir = tempDir('sd-fast-groups-');
    const n = 30_000;
    writeFileSync(join(dir, 'items.txt'), 'x\n'.repeat(n));
    const args = ['run', 'items.txt', '--lines', '1', '--handler', handler('noop-batch'), '-j', String(SLOTS), '--retries', '1'];
    const env = { SD_MARK: dir };
    const first = startCli(args, { cwd: dir, env, detached: true });
    const db = dbPathIn(dir);
    await waitUntil(async () => (await succeededSoFar(db)) >= n / 4, 40_000, 'a quarter of the items done');
    process.kill(first.pid!, 'SIGKILL');
    expect((await first.result).signal).toBe('SIGKILL');
    await waitFor(() => processesWithEnv(dir).length === 0, 5000, 'its workers gone');
    const left = await countsIn(db);
    expect(left.succeeded).toBeLessThan(n); // killed mid-run
    // Held: per slot its running group and one queued (HELD). Settled but not yet committed
    // when it died: at most what the slots held at the tick before.
    expect(left.running + left.queued, JSON.stringify(left)).toBeLessThanOrEqual(2 * HELD);

    const again = await startCli(args, { cwd: dir, env }).result;
    expect(again.code, again.stderr).toBe(0);
    const attempts = await storedAttempts(db);
    expect(attempts.filter((a) => a.outcome === 'LOST')).toHaveLength(left.running + left.queued);
    expect(await countsIn(db)).toMatchObject({ total: n, succeeded: n });
  }, 90_000);
});
