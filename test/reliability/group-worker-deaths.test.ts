import { describe, expect, it } from 'vitest';
import { sleep, startCli, waitFor } from '../helpers/cli.js';
import { overlaps } from '../helpers/attempt-overlaps.js';
import { batchHandler, callsIn, groupProject, runningCalls } from '../helpers/group-runs.js';
import { attemptsIn, tasksIn } from '../helpers/read-store.js';
import { countBy, dbPathIn, logEntries } from '../helpers/store.js';
import { checkInvariants } from './invariants.js';

// A group's worker that dies (SIGKILL, OOM, a crash) settles every item of it INTERRUPTED, not
// charged: the death may be any one item's doing, or none's. Each item then runs in a group half
// as big, so an item that kills its worker ends alone, and only then is it charged (CRASHED).

const GROUP = 64; // the default bound of a batch export (SPEC §10)
/** A slot holds its running group and one queued behind it (pool/slot-window.ts: the most a call this slow queues). */
const HELD_PER_SLOT = 2 * GROUP;

describe.each([batchHandler])('a group\'s worker that dies, with $name', (work) => {
  it('SIGKILL of a worker mid-call: its items are not charged (INTERRUPTED) and all succeed in the same run, with --retries 0', async () => {
    const p = groupProject(200);
    const env = { ...p.env, SLEEP_MS: '600' };
    const run = startCli(['run', 'src', ...work.args, '-j', '2', '--retries', '0'], { cwd: p.dir, env });
    await waitFor(() => runningCalls(p.log).length > 0, 30_000, 'a call running');
    await sleep(100);
    const [victim] = runningCalls(p.log);
    process.kill(victim!.pid, 'SIGKILL');
    const r = await run.result;
    expect(r.code, r.stderr).toBe(0);

    const db = dbPathIn(p.dir);
    const tasks = await tasksIn(db);
    expect(countBy(tasks, (t) => t.status)).toEqual(new Map([['SUCCESS', 200]]));
    // Counted attempts: one each, the killed group's items included (a charge would have failed them).
    expect(tasks.filter((t) => t.attempts !== 1).map((t) => t.key)).toEqual([]);
    const attempts = await attemptsIn(db);
    expect(attempts.filter((a) => a.outcome === 'CRASHED')).toEqual([]);
    const killed = new Set(victim!.keys);
    for (const key of killed) {
      const of = attempts.filter((a) => a.key === key);
      expect(of.map((a) => a.outcome), key).toEqual(['INTERRUPTED', 'SUCCESS']);
      expect(of[0]!.error).toContain(`its group of ${killed.size} items lost its worker`);
    }
    // Run again in groups at most half as big.
    const later = callsIn(p.log).filter((c) => c.id !== victim!.id && c.keys.some((k) => killed.has(k)));
    expect(later.length).toBeGreaterThan(0);
    for (const c of later) expect(c.size).toBeLessThanOrEqual(Math.ceil(killed.size / 2));
    // Unstarted attempts: the dead worker's slot held its group and one queued behind it, given back INTERRUPTED.
    expect(checkInvariants({ dbPath: db, keys: p.keys, retries: 0, logPath: p.log, kills: 1, concurrency: 1, heldPerSlot: HELD_PER_SLOT })).toEqual([]);
    expect(overlaps(logEntries(p.log))).toEqual([]);
  });

  it('an item that kills every worker whose call holds it ends FAILED (CRASHED) alone, every other SUCCESS, within log2(64) + retries + 1 worker deaths', async () => {
    const p = groupProject(100);
    const poison = p.keys[10]!; // in the first group of 64
    const retries = 1;
    const env = { ...p.env, SLEEP_MS: '20', POISON_KEY: poison };
    const deaths = Math.log2(GROUP) + retries + 1;
    const deadly = () => callsIn(p.log).filter((c) => c.keys.includes(poison));
    const run = startCli(['run', 'src', ...work.args, '-j', '2', '--retries', String(retries)], { cwd: p.dir, env });
    // A run that kills workers past the bound is stopped, not waited for (it might never end).
    let ended = false;
    void run.result.then(() => (ended = true));
    while (!ended && deadly().length <= deaths) await sleep(50);
    if (!ended) run.kill('SIGKILL');
    const r = await run.result;
    expect(deadly().length).toBeLessThanOrEqual(deaths);
    expect(r.code, r.stderr).toBe(1);

    const db = dbPathIn(p.dir);
    const tasks = await tasksIn(db);
    expect(countBy(tasks, (t) => t.status)).toEqual(new Map([['SUCCESS', 99], ['FAILED', 1]]));
    expect(tasks.find((t) => t.status === 'FAILED')).toMatchObject({ key: poison, attempts: 1 + retries });
    expect(tasks.filter((t) => t.key !== poison && t.attempts !== 1).map((t) => t.key)).toEqual([]);
    // The poison's history: uncharged group deaths, then charged deaths of its own.
    const outcomes = (await attemptsIn(db)).filter((a) => a.key === poison).map((a) => a.outcome);
    expect(outcomes.slice(-1 - retries)).toEqual(Array(1 + retries).fill('CRASHED'));
    expect(new Set(outcomes.slice(0, -1 - retries))).toEqual(new Set(['INTERRUPTED']));

    // Each call holding it killed its worker; each next one is at most half as big as the last, down to it alone.
    const calls = deadly();
    expect(calls.every((c) => !c.ended)).toBe(true);
    for (let i = 1; i < calls.length; i++) expect(calls[i]!.size).toBeLessThanOrEqual(Math.ceil(calls[i - 1]!.size / 2));
    expect(calls.slice(-1 - retries).map((c) => c.size)).toEqual(Array(1 + retries).fill(1));
    expect(checkInvariants({ dbPath: db, keys: p.keys, retries, logPath: p.log, kills: calls.length, concurrency: 1, heldPerSlot: HELD_PER_SLOT, terminal: ['SUCCESS', 'FAILED'] })).toEqual([]);
  });
});
