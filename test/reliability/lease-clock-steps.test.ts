import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { handler, runCli, sleep, startCli, waitFor } from '../helpers/cli.js';
import { fakeClock } from '../helpers/faketime.js';
import { runInNamespace } from '../helpers/namespaces.js';
import { privatePgUnavailable, startPrivatePg, type PrivatePg } from '../helpers/pg-private.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { missing } from '../helpers/services.js';
import { dbPathIn, logEntries, storedAttempts, storedTasks } from '../helpers/store.js';
import { checkInvariants } from './invariants.js';

// RELIABILITY R39: a forward step of the clock leases are measured on must never turn a live,
// heartbeating owner into a dead one. Before the renewal watch, every live lease looked an hour
// past its end to the other side, which took the tasks (8 of 8 long tasks) and ran keys twice.
// The clock is stepped with libfaketime on one process tree or on a private server, never the
// system's: on SQLite the looking run's clock (the machine's, as that run sees it), on
// PostgreSQL the server's.

const TASKS = 8;
const SLEEP_MS = '4000';
const noFaketime = missing('faketime', 'the lease clock-step tests (R39)');
const root = !missing('root', 'the lease clock-step tests across PID namespaces (R39)');

/** A world readable folder for the offset file (a private server runs as `postgres`). */
function clockDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sd-clock-'));
  chmodSync(dir, 0o755);
  return dir;
}

describe.skipIf(noFaketime || !root)('a forward clock step under leases (R39)', () => {
  it('SQLite, two runs in two PID namespaces: one sees the clock +1 h; it takes none of the other’s live tasks, no key runs twice, no attempt is spent', async () => {
    const p = projectWithFiles(TASKS, 'sd-r39-');
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS, CANARY_DIR: p.dir };
    const args = ['run', 'src', '--handler', handler('record'), '-j', '2', '--lease', '30s', '--retries', '3', '--quiet'];
    const first = runInNamespace(args, p.dir, env, 120_000);
    await waitFor(() => logEntries(p.log).filter((e) => e.type === 'start').length >= 2, 30_000, 'the first run to start two attempts');
    const clock = fakeClock(clockDir());
    const second = runInNamespace(args, p.dir, { ...env, ...clock.env }, 120_000);
    await waitFor(() => logEntries(p.log).filter((e) => e.type === 'start').length >= 4, 30_000, 'the second run to start its own attempts');
    clock.step('+1h');
    // Several polls and heartbeats of the first run's lease pass with every one of its leases an hour old to the second.
    const [a, b] = await Promise.all([first, second]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const db = dbPathIn(p.dir);
    expect((await storedAttempts(db)).filter((a) => a.outcome !== 'SUCCESS')).toEqual([]);
    expect((await storedTasks(db)).filter((t) => t.attempts !== 1)).toEqual([]);
    expect(checkInvariants({ dbPath: db, keys: p.keys, retries: 3, logPath: p.log, concurrency: 4 })).toEqual([]);
  }, 150_000);

  describe.skipIf(privatePgUnavailable() !== null)('PostgreSQL', () => {
    let server: PrivatePg | undefined;
    afterAll(() => server?.destroy());

    it("the server's clock steps +1 h under two hosts: neither takes the other's live tasks, no key runs twice, no attempt is spent", async () => {
      const clock = fakeClock(clockDir());
      server = await startPrivatePg({ env: clock.env });
      const p = projectWithFiles(TASKS, 'sd-r39pg-');
      const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS, CANARY_DIR: p.dir };
      const common = ['--db', `${server.url}?schema=r39`, '-j', '2', '--lease', '30s'];
      const enqueued = await runCli(['run', 'src', '--handler', handler('record'), ...common, '--retries', '3', '--max-runtime', '1ms'], { cwd: p.dir, env });
      expect(enqueued.code, enqueued.stderr).toBe(3);
      const a = startCli(['worker', ...common], { cwd: p.dir, env: { ...env, SPLITDANCE_HOST_ID: 'host-a' }, timeoutMs: 120_000 });
      const b = startCli(['worker', ...common], { cwd: p.dir, env: { ...env, SPLITDANCE_HOST_ID: 'host-b' }, timeoutMs: 120_000 });
      await waitFor(() => logEntries(p.log).filter((e) => e.type === 'start').length >= 4, 60_000, 'both hosts to start attempts');
      await sleep(300);
      clock.step('+1h');
      const [ra, rb] = await Promise.all([a.result, b.result]);
      expect(ra.code, ra.stderr).toBe(0);
      expect(rb.code, rb.stderr).toBe(0);
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      try {
        const lost = await client.query("SELECT outcome, count(*)::int AS n FROM r39.attempts WHERE outcome <> 'SUCCESS' GROUP BY outcome");
        expect(lost.rows).toEqual([]);
        const tasks = await client.query('SELECT status, attempts, count(*)::int AS n FROM r39.tasks GROUP BY status, attempts');
        expect(tasks.rows).toEqual([{ status: 'SUCCESS', attempts: 1, n: TASKS }]);
      } finally {
        await client.end();
      }
      expect(logEntries(p.log).filter((e) => e.type === 'double')).toEqual([]);
      const starts = logEntries(p.log).filter((e) => e.type === 'start').map((e) => e.key);
      expect(starts.sort()).toEqual([...p.keys].sort());
      await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'no process left');
    }, 180_000);
  });
});
