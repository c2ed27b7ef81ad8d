import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, sleep, startCli } from '../helpers/cli.js';
import { PG_URL, pgQuery, pgSchemas } from '../helpers/pg.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { countBy, logEntries, sideEffects } from '../helpers/store.js';
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
    const { db, schema } = freshDb();
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

    // Mid-run, with host B holding tasks of its own and having finished some.
    const heldBy = async (id: string) =>
      (await pgQuery<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.tasks WHERE status = 'RUNNING' AND lease_owner LIKE $1`, [`${id}/%`]))[0]!.n;
    const doneBy = async (id: string) =>
      (await pgQuery<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.attempts WHERE outcome = 'SUCCESS' AND host = $1`, [id]))[0]!.n;
    const deadline = Date.now() + 60_000;
    while (!((await doneBy('host-b')) >= 10 && (await heldBy('host-b')) > 0)) {
      if (Date.now() > deadline) throw new Error('host B never got to work');
      await sleep(10);
    }
    expect(sideEffects(p.log).length).toBeLessThan(TASKS - 50); // really mid-run

    const killedAt = Date.now();
    const killed = await loseMachine(b.marker);
    expect(killed.length).toBeGreaterThanOrEqual(3); // its coordinator and its two workers
    expect((await b.child.result).signal).toBe('SIGKILL');
    // What host B held when it died: no process will ever heartbeat these leases again.
    const orphans = await pgQuery<{ id: number; task_key: string; lease_expires_at: string }>(
      `SELECT id::int, task_key, lease_expires_at FROM ${schema}.tasks WHERE status = 'RUNNING' AND lease_owner LIKE 'host-b/%'`,
    );
    expect(orphans.length).toBeGreaterThan(0);

    const [ra, rc] = await Promise.all([a.child.result, c.child.result]);
    expect(ra.code, ra.stderr).toBe(0);
    expect(rc.code, rc.stderr).toBe(0);

    // Each LOST attempt, with the start of its task's next attempt (the takeover).
    const lost = await pgQuery<{ task_id: number; host: string; error: string; next_started: string }>(
      `SELECT a.task_id::int, a.host, a.error,
              (SELECT min(n.started_at) FROM ${schema}.attempts n WHERE n.task_id = a.task_id AND n.id > a.id) AS next_started
       FROM ${schema}.attempts a WHERE a.outcome = 'LOST' ORDER BY a.task_id`,
    );
    expect(lost.map((l) => l.task_id)).toEqual(orphans.map((o) => o.id).sort((x, y) => x - y));
    for (const l of lost) {
      expect(l.host).toBe('host-b');
      expect(l.error).toMatch(/lease .* expired/);
      const orphan = orphans.find((o) => o.id === l.task_id)!;
      // Not at once (no other host can see B's pids are gone), and not before the last lease B wrote ran out.
      expect(Number(l.next_started)).toBeGreaterThanOrEqual(Number(orphan.lease_expires_at));
      expect(Number(l.next_started) - killedAt).toBeGreaterThanOrEqual(LEASE_MS / 2);
    }

    const tasks = await pgQuery<TaskRow>(`SELECT id::int, task_key, status, attempts FROM ${schema}.tasks`);
    expect(countBy(tasks, (t) => t.status)).toEqual(new Map([['SUCCESS', TASKS]]));
    // Exactly once for every task B did not hold when it died; at most twice for those it did.
    const orphanKeys = new Set(orphans.map((o) => o.task_key));
    const ends = countBy(sideEffects(p.log), (e) => e.key);
    const starts = countBy(logEntries(p.log).filter((e) => e.type === 'start'), (e) => e.key);
    const wrong = p.keys.filter((k) => (orphanKeys.has(k) ? !(ends.get(k)! >= 1 && ends.get(k)! <= 2) : ends.get(k) !== 1 || starts.get(k) !== 1));
    expect(wrong).toEqual([]);
    const attempts = await pgQuery<AttemptRow>(`SELECT task_id::int, id::int, outcome FROM ${schema}.attempts ORDER BY id`);
    expect(checkHistory(tasks, attempts, { keys: p.keys, retries: 3, logPath: p.log, kills: 1, concurrency: 2 })).toEqual([]);
    // Every host took part, and the killed one left nothing behind.
    for (const id of ['host-a', 'host-b', 'host-c']) expect(await doneBy(id)).toBeGreaterThan(0);
    expect(processesWithEnv(b.marker)).toEqual([]);
  });
});
