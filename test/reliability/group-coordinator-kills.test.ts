import { describe, expect, it } from 'vitest';
import { sleep, startCli, waitFor } from '../helpers/cli.js';
import { overlaps } from '../helpers/attempt-overlaps.js';
import { batchHandler, callsIn, groupProject, releaseStopped, runningCalls } from '../helpers/group-runs.js';
import { processesWithEnv } from '../helpers/procs.js';
import { tasksIn } from '../helpers/read-store.js';
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
