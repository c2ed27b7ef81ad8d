import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { overlaps } from '../helpers/attempt-overlaps.js';
import { batchHandler, callsIn, groupProject, releaseStopped, runningCalls } from '../helpers/group-runs.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { processesWithEnv } from '../helpers/procs.js';
import { readStore } from '../helpers/read-store.js';
import { countBy, logEntries } from '../helpers/store.js';
import { checkHistory, type AttemptRow, type TaskRow } from './invariants.js';

// Groups on a shared PostgreSQL store (SPEC §10): a `run` and a `worker` on one batch of a
// handler's batch export, and one of them SIGKILLed while a call of its runs. Its groups' items
// are taken back by the other (this host sees its processes are gone), every one recorded LOST
// and run again: nothing lost, no item twice at once, every task SUCCESS.

const freshDb = pgSchemas('groups');
// More than both hold at once (2 × HELD): a claim after the kill still finds work.
const TASKS = 600;
const CALL_MS = 400;
const GROUP = 64; // the default bound of a batch export
/** What a killed coordinator holds: per slot its running group and one queued (pool/slot-window.ts). */
const HELD = 2 * 2 * GROUP;

/** The parent of a process, from /proc (0 once it is gone). */
function parentOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return 0;
  }
}

describe.skipIf(!PG_URL).each([batchHandler])('groups on a shared PostgreSQL store, with $name', (work) => {
  it.each(['worker', 'run'] as const)('a run and a worker on one batch, the %s SIGKILLed mid-call: nothing lost, no item twice at once, every task SUCCESS', async (victim) => {
    const { db } = freshDb();
    const p = groupProject(TASKS);
    const gate = join(p.dir, 'gate');
    const env = { ...p.env, SLEEP_MS: String(CALL_MS), GATE_FILE: gate };
    const runArgs = ['run', 'src', '--db', db, ...work.args, '-j', '2', '--retries', '3'];
    const enqueued = await runCli([...runArgs, '--max-runtime', '1ms'], { cwd: p.dir, env });
    expect(enqueued.code, enqueued.stderr).toBe(3);

    // Calls wait at a gate until both have a call running: neither finishes the batch alone however slowly the other starts, and the victim's is mid-call.
    const runs = { run: startCli(runArgs, { cwd: p.dir, env }), worker: startCli(['worker', '--db', db, '-j', '2'], { cwd: p.dir, env }) };
    const killed = runs[victim];
    const survivor = runs[victim === 'run' ? 'worker' : 'run'];
    const callsOf = (pid: number) => runningCalls(p.log).filter((c) => parentOf(c.pid) === pid);
    await waitFor(() => callsOf(killed.pid!).length > 0 && callsOf(survivor.pid!).length > 0, 30_000, 'a call of each');
    // Its busy workers stopped first: alive, they would exit within milliseconds of its death,
    // before the survivor looks. The survivor must kill them before it runs their items.
    const stopped = [...new Set(callsOf(killed.pid!).map((c) => c.pid))];
    for (const pid of stopped) process.kill(pid, 'SIGSTOP');
    killed.kill('SIGKILL');
    expect((await killed.result).signal).toBe('SIGKILL');
    writeFileSync(gate, '');
    const held = runningCalls(p.log).filter((c) => stopped.includes(c.pid));
    await releaseStopped(p.log, stopped, held);
    const r = await survivor.result;
    expect(r.code, r.stderr).toBe(0);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'nothing of either alive');
    const cut = callsIn(p.log).filter((c) => !c.ended); // only the kill cut calls short

    const history = await readStore(db, async (s) => {
      const batch = await s.latestBatch();
      const all = [];
      for (const task of await s.listTasks({ batchId: batch!.id })) all.push({ task, attempts: await s.attemptsOf(task.id) });
      return all;
    });
    const tasks: TaskRow[] = history.map(({ task: t }) => ({ id: t.id, task_key: t.key, status: t.status, attempts: t.attempts }));
    const attempts: AttemptRow[] = history.flatMap(({ task, attempts: of }) => of.map((a) => ({ task_id: task.id, id: a.id, outcome: a.outcome }))).sort((x, y) => x.id - y.id);
    expect(countBy(tasks, (t) => t.status)).toEqual(new Map([['SUCCESS', TASKS]]));
    expect(checkHistory(tasks, attempts, { keys: p.keys, retries: 3, logPath: p.log, kills: 1, concurrency: 2, heldPerSlot: HELD / 2 })).toEqual([]);
    expect(overlaps(logEntries(p.log))).toEqual([]);

    // Every item of a call the kill cut short came back LOST; an item ran again only for a LOST attempt of its own.
    const lost = new Set(history.filter(({ attempts: of }) => of.some((a) => a.outcome === 'LOST')).map(({ task }) => task.key));
    expect(cut.length).toBeGreaterThan(0);
    for (const key of cut.flatMap((c) => c.keys)) expect(lost.has(key), `${key} was in a call cut short`).toBe(true);
    expect(lost.size).toBeLessThanOrEqual(HELD);
    const starts = countBy(logEntries(p.log).filter((e) => e.type === 'start'), (e) => e.key);
    const ends = countBy(logEntries(p.log).filter((e) => e.type === 'end'), (e) => e.key);
    const wrong = p.keys.filter((k) => (lost.has(k) ? !(ends.get(k)! >= 1 && starts.get(k)! <= 2) : ends.get(k) !== 1 || starts.get(k) !== 1));
    expect(wrong).toEqual([]);
    expect(callsIn(p.log).some((c) => c.size > 1)).toBe(true); // it ran in groups
  });
});
