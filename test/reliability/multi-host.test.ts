import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, sleep, startCli } from '../helpers/cli.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { readStore, tasksIn } from '../helpers/read-store.js';
import { countBy, logEntries, sideEffects, storedAttempts } from '../helpers/store.js';
import { checkHistory, type AttemptRow, type TaskRow } from './invariants.js';

// Three machines share one PostgreSQL store, simulated on this one: each process tree gets its
// own host identity (SPLITDANCE_HOST_ID), so no host can look at another's pids. One host is lost
// whole (coordinator and workers SIGKILLed at once): its tasks can only come back once its lease
// ran out, and nothing but those tasks may run twice.

const freshDb = pgSchemas('hosts');
const TASKS = 300;
const LEASE_MS = 2000;

/** SIGKILLs every process whose environment holds `marker` until none is left: a machine lost at once. */
async function loseMachine(marker: string): Promise<number[]> {
  const killed = new Set<number>();
  for (let round = 0; round < 50; round++) {
    const pids = processesWithEnv(marker);
    if (!pids.length) return [...killed];
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
        killed.add(pid);
      } catch {
        // already gone
      }
    }
    await sleep(20);
  }
  throw new Error(`processes of ${marker} survive SIGKILL: ${processesWithEnv(marker).join(' ')}`);
}

describe.skipIf(!PG_URL)('three simulated hosts on one PostgreSQL store', () => {
  it('a host lost mid-run: its tasks come back LOST only after its lease, every other task runs exactly once', async () => {
    const { db } = freshDb();
    const p = projectWithFiles(TASKS);
    const canaries = join(p.dir, 'canaries');
    mkdirSync(canaries);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '30', CANARY_DIR: canaries };
    const common = ['--db', db, '-j', '2', '--lease', `${LEASE_MS}ms`];
    const runArgs = ['run', 'src', '--handler', handler('record'), '--retries', '3', ...common];
    // The batch exists before the workers start (a worker joins existing batches).
    const enqueued = await runCli([...runArgs, '--max-runtime', '1ms'], { cwd: p.dir, env });
    expect(enqueued.code, enqueued.stderr).toBe(3);

    const host = (id: string, args: string[]) => {
      const marker = `${p.dir}#${id}`; // inherited by every process of this host's tree
      const child = startCli(args, { cwd: p.dir, env: { ...env, SPLITDANCE_HOST_ID: id, SIM_MACHINE: marker }, timeoutMs: 120_000 });
      return { id, marker, child };
    };
    const a = host('host-a', runArgs);
    const b = host('host-b', ['worker', ...common]);
    const c = host('host-c', ['worker', ...common]);

    // Mid-run, with host B holding tasks of its own and having finished some. A host's leases
    // are its coordinator's: the lease owner `host-b/…` (listTasks shows it), read through the store's verbs.
    const heldBy = async (id: string) => (await tasksIn(db)).filter((t) => t.status === 'RUNNING' && t.leaseOwner?.startsWith(`${id}/`));
    const doneBy = async (id: string) => (await storedAttempts(db)).filter((a) => a.outcome === 'SUCCESS' && a.host === id).length;
    const deadline = Date.now() + 60_000;
    while (!((await doneBy('host-b')) >= 10 && (await heldBy('host-b')).length > 0)) {
      if (Date.now() > deadline) throw new Error('host B never got to work');
      await sleep(10);
    }
    expect(sideEffects(p.log).length).toBeLessThan(TASKS - 50); // really mid-run

    const killedAt = Date.now();
    const killed = await loseMachine(b.marker);
    expect(killed.length).toBeGreaterThanOrEqual(3); // its coordinator and its two workers
    expect((await b.child.result).signal).toBe('SIGKILL');
    // What host B held when it died: no process will ever heartbeat these leases again.
    const orphans = await heldBy('host-b');
    expect(orphans.length).toBeGreaterThan(0);

    const [ra, rc] = await Promise.all([a.child.result, c.child.result]);
    expect(ra.code, ra.stderr).toBe(0);
    expect(rc.code, rc.stderr).toBe(0);

    // Every task with its attempts (oldest first), through listTasks and attemptsOf.
    const history = await readStore(db, async (s) => {
      const batch = await s.latestBatch();
      const all = [];
      for (const task of await s.listTasks({ batchId: batch!.id })) all.push({ task, attempts: await s.attemptsOf(task.id) });
      return all;
    });
    // Each LOST attempt, with the start of its task's next attempt (the takeover), by task id.
    const lost = history
      .flatMap(({ task, attempts }) =>
        attempts
          .filter((a) => a.outcome === 'LOST')
          .map((a) => {
            const later = attempts.filter((n) => n.id > a.id).map((n) => n.startedAt);
            return { task_id: task.id, host: a.host, error: a.error, next_started: later.length ? Math.min(...later) : null }; // null (0): never taken over
          }),
      )
      .sort((x, y) => x.task_id - y.task_id);
    expect(lost.map((l) => l.task_id)).toEqual(orphans.map((o) => o.id).sort((x, y) => x - y));
    for (const l of lost) {
      expect(l.host).toBe('host-b');
      expect(l.error).toMatch(/lease .* expired/);
      const orphan = orphans.find((o) => o.id === l.task_id)!;
      // Not at once (no other host can see B's pids are gone), and not before the last lease B wrote ran out.
      expect(Number(l.next_started)).toBeGreaterThanOrEqual(Number(orphan.leaseExpiresAt));
      expect(Number(l.next_started) - killedAt).toBeGreaterThanOrEqual(LEASE_MS / 2);
    }

    const tasks: TaskRow[] = history.map(({ task: t }) => ({ id: t.id, task_key: t.key, status: t.status, attempts: t.attempts }));
    expect(countBy(tasks, (t) => t.status)).toEqual(new Map([['SUCCESS', TASKS]]));
    // Exactly once for every task B did not hold when it died; at most twice for those it did.
    const orphanKeys = new Set(orphans.map((o) => o.key));
    const ends = countBy(sideEffects(p.log), (e) => e.key);
    const starts = countBy(logEntries(p.log).filter((e) => e.type === 'start'), (e) => e.key);
    const wrong = p.keys.filter((k) => (orphanKeys.has(k) ? !(ends.get(k)! >= 1 && ends.get(k)! <= 2) : ends.get(k) !== 1 || starts.get(k) !== 1));
    expect(wrong).toEqual([]);
    const attempts: AttemptRow[] = history.flatMap(({ task, attempts: of }) => of.map((a) => ({ task_id: task.id, id: a.id, outcome: a.outcome }))).sort((x, y) => x.id - y.id);
    expect(checkHistory(tasks, attempts, { keys: p.keys, retries: 3, logPath: p.log, kills: 1, concurrency: 2 })).toEqual([]);
    // Every host took part, and the killed one left nothing behind.
    for (const id of ['host-a', 'host-b', 'host-c']) expect(await doneBy(id)).toBeGreaterThan(0);
    expect(processesWithEnv(b.marker)).toEqual([]);
  });
});
