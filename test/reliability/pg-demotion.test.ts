import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, sleep, startCli, waitFor, type CliResult } from '../helpers/cli.js';
import { privatePgUnavailable, startPrivatePg, type PrivatePg } from '../helpers/pg-private.js';
import { processesWithEnv } from '../helpers/procs.js';
import { statusCounts } from '../helpers/json-views.js';
import { projectWithFiles } from '../helpers/project.js';

// R47: a primary that turns read-only for a few seconds (a failover demoting it) refuses every
// write on every open session with SQLSTATE 25006. That is an outage like a restart: the run
// rides it out up to the outage limit, no host exits, and the batch completes once writes work
// again; read-only for longer than the limit ends the run with exit 4 in one line. The server
// is a private throwaway cluster: `ALTER SYSTEM` + reload reaches the sessions already open, as
// a demotion does (`ALTER DATABASE … SET` would reach new sessions only), and the shared test
// server is never made read-only.

const unavailable = privatePgUnavailable();
if (unavailable) console.warn(`skipping the PostgreSQL demotion tests: ${unavailable}`);
let server: PrivatePg;

beforeAll(async () => {
  if (!unavailable) server = await startPrivatePg();
}, 90_000);
afterAll(() => server?.destroy());

/** One statement on a session of its own that may write whatever the server's default says. */
async function admin<T>(text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: server.url, options: '-c default_transaction_read_only=off' });
  await client.connect();
  try {
    return (await client.query(text)).rows as T[];
  } finally {
    await client.end();
  }
}

async function readOnly(on: boolean): Promise<void> {
  await admin(on ? 'ALTER SYSTEM SET default_transaction_read_only = on' : 'ALTER SYSTEM RESET default_transaction_read_only');
  await admin('SELECT pg_reload_conf()');
}

/** Lines of the side-effect log: one per attempt whose command ran to its `echo`. */
const ran = (log: string) => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => basename(l)) : []);

function startRun(n: number, schema: string, env: NodeJS.ProcessEnv = {}, slots = '4') {
  const p = projectWithFiles(n, 'sd-pgdemote-');
  const log = join(p.dir, 'ran.txt');
  const db = `${server.url}?schema=${schema}`;
  // Each host also counts its own attempts, in a file named by SD_HOST.
  const exec = `echo {} >> ${log}; echo . >> ${join(p.dir, 'host-')}$SD_HOST; sleep 0.05`;
  const run = startCli(['run', 'src', '--db', db, '--exec', exec, '-j', slots], { cwd: p.dir, env: { SD_HOST: 'run', ...env }, timeoutMs: 120_000 });
  return { p, run, log, db };
}

describe.skipIf(unavailable !== null)(`run rides out a primary turned read-only${unavailable ? ` (skipped: ${unavailable})` : ''}`, () => {
  it('read-only for 8 s under a run -j 2 and a worker -j 2 on one batch: neither exits, both say the store is back, exit 0 with every task SUCCESS and run once', async () => {
    const { p, run, log, db } = startRun(300, 'demoted_briefly', {}, '2');
    await waitFor(() => ran(log).length >= 20, 60_000, 'the batch started');
    const worker = startCli(['worker', '--db', db, '-j', '2'], { cwd: p.dir, env: { SD_HOST: 'worker' }, timeoutMs: 120_000 });
    // Read-only only once the worker runs attempts: a start-up that meets it is another matter.
    await waitFor(() => ran(join(p.dir, 'host-worker')).length >= 10, 60_000, 'the worker ran 10 attempts');
    await readOnly(true);
    try {
      await sleep(8000);
    } finally {
      await readOnly(false);
    }
    const [r, w]: CliResult[] = await Promise.all([run.result, worker.result]);
    for (const [name, x] of [['run', r], ['worker', w]] as const) {
      expect(x.signal, `${name} hung: ${x.stderr}`).toBeNull();
      expect(x.code, `${name}: ${x.stderr}`).toBe(0);
      expect(x.stderr, name).toMatch(/the store is unavailable \(PostgreSQL at .* accepts no writes/);
      expect(x.stderr, name).toMatch(/the store is back/);
    }
    expect(await statusCounts(p.dir, ['--db', db])).toEqual({ SUCCESS: 300 });
    // A refused write commits nothing and loses no lease (8 s is well inside the 30 s lease):
    // no attempt is repeated, on either host.
    const lines = ran(log);
    expect(lines.length, 'each task ran exactly once').toBe(300);
    expect(new Set(lines)).toEqual(new Set(p.keys));
    expect(processesWithEnv(p.dir)).toEqual([]);
  }, 150_000);

  it('read-only for longer than the outage limit: exit 4 in one line naming it, no process left; a rerun once writable finishes the batch', async () => {
    const { p, run, log, db } = startRun(200, 'demoted_long', { SPLITDANCE_RECONNECT_MS: '3000' });
    await waitFor(() => ran(log).length >= 20, 60_000, '20 attempts run');
    await readOnly(true);
    let r: CliResult;
    try {
      r = await run.result;
    } finally {
      await readOnly(false);
    }
    expect(r.signal, `hung: ${r.stderr}`).toBeNull();
    expect(r.code, r.stderr).toBe(4);
    const errors = r.stderr.split('\n').filter((l) => /error/i.test(l));
    expect(errors, r.stderr).toEqual([expect.stringMatching(/^splitdance: error: the store stayed unavailable for .* \(limit 3s\): PostgreSQL at .* accepts no writes .*point --db at the primary$/)]);
    expect(r.stderr).not.toMatch(/unexpected error|\n\s+at /);
    await sleep(200);
    expect(processesWithEnv(p.dir)).toEqual([]);
    const again = await runCli(['run', 'src', '--db', db, '--exec', `echo {} >> ${log}`, '-j', '4', '--quiet'], { cwd: p.dir, timeoutMs: 60_000 });
    expect(again.code, again.stderr).toBe(0);
    expect(await statusCounts(p.dir, ['--db', db])).toEqual({ SUCCESS: 200 });
  }, 150_000);
});
