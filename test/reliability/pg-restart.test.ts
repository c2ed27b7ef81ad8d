import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, sleep, startCli, waitFor, type CliResult } from '../helpers/cli.js';
import { privatePgUnavailable, startPrivatePg, type PrivatePg } from '../helpers/pg-private.js';
import { processesWithEnv } from '../helpers/procs.js';
import { statusCounts } from '../helpers/json-views.js';
import { projectWithFiles, writeFiles } from '../helpers/project.js';
import { storedAttempts } from '../helpers/store.js';

// Issue 18 item 5: a PostgreSQL restart under a run is an outage the run waits out (its running
// attempts go on, it reconnects with backoff), not the end of it; an outage past the limit ends
// the run with exit 4 naming it, never a hang. The server restarted here is a private
// throwaway cluster: the shared test server is never touched.

const unavailable = privatePgUnavailable();
if (unavailable) console.warn(`skipping the PostgreSQL restart tests: ${unavailable}`);
let server: PrivatePg;

beforeAll(async () => {
  if (!unavailable) server = await startPrivatePg();
}, 90_000);
afterAll(() => server?.destroy());

/** Lines of the side-effect log: one per attempt whose command ran to its `echo`. */
const ran = (log: string) => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => basename(l)) : []);

/** A run of `n` files whose command logs its file, then sleeps `sleep` seconds. */
function startRun(n: number, schema: string, sleepS: string, env: NodeJS.ProcessEnv = {}, slots = '4') {
  const p = projectWithFiles(n, 'sd-pgrestart-');
  const db = `${server.url}?schema=${schema}`;
  const exec = `echo {} >> ${join(p.dir, 'ran.txt')}; sleep ${sleepS}`;
  const run = startCli(['run', 'src', '--db', db, '--exec', exec, '-j', slots, '--progress-interval', '200ms'], { cwd: p.dir, env, timeoutMs: 120_000 });
  return { p, run, db, log: join(p.dir, 'ran.txt') };
}

describe.skipIf(unavailable !== null)(`run rides out a PostgreSQL restart${unavailable ? ` (skipped: ${unavailable})` : ''}`, () => {
  it('pg_ctl restart -m fast under run -j 4 of 600 short tasks: exit 0, every task SUCCESS, at most the in-flight attempts repeated', async () => {
    const { p, run, db, log } = startRun(600, 'restart_ok', '0.01');
    await waitFor(() => ran(log).length >= 100, 60_000, '100 attempts run');
    server.restart();
    const r: CliResult = await run.result;
    expect(r.signal, `hung: ${r.stderr}`).toBeNull();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/the store is unavailable/);
    expect(r.stderr).toMatch(/the store is back/);
    expect(await statusCounts(p.dir, ['--db', db])).toEqual({ SUCCESS: 600 });
    // Each task ran; the only repeats allowed are attempts in flight as the server went down
    // (4 slots, each running one and holding at most its next).
    const lines = ran(log);
    expect(new Set(lines)).toEqual(new Set(p.keys));
    expect(lines.length - 600).toBeLessThanOrEqual(8);
    const attempts = (await storedAttempts(db)).filter((a) => a.outcome !== null && a.outcome !== 'INTERRUPTED').length;
    expect(attempts).toBeGreaterThanOrEqual(600); // read from the batch, not an empty answer
    expect(attempts - 600).toBeLessThanOrEqual(8);
    expect(processesWithEnv(p.dir)).toEqual([]);
  }, 150_000);

  it('a run -j 2 and a worker -j 2 on one batch both ride out the restart: exit 0, every task SUCCESS, at most the in-flight attempts repeated', async () => {
    const { p, run, db, log } = startRun(600, 'restart_worker', '0.01', {}, '2');
    await waitFor(() => ran(log).length >= 20, 60_000, 'the batch started');
    const worker = startCli(['worker', '--db', db, '-j', '2'], { cwd: p.dir, timeoutMs: 120_000 });
    await waitFor(() => ran(log).length >= 150, 60_000, '150 attempts run');
    server.restart();
    const [r, w] = await Promise.all([run.result, worker.result]);
    expect(r.signal, `run hung: ${r.stderr}`).toBeNull();
    expect(w.signal, `worker hung: ${w.stderr}`).toBeNull();
    expect(r.code, r.stderr).toBe(0);
    expect(w.code, w.stderr).toBe(0);
    expect(w.stderr).toMatch(/the store is back/);
    expect(await statusCounts(p.dir, ['--db', db])).toEqual({ SUCCESS: 600 });
    const lines = ran(log);
    expect(new Set(lines)).toEqual(new Set(p.keys));
    expect(lines.length - 600).toBeLessThanOrEqual(8);
    expect(processesWithEnv(p.dir)).toEqual([]);
  }, 150_000);

  it('a worker whose batch start meets the outage (the server goes down while its handler loads) rides it out: exit 0, every task SUCCESS', async () => {
    const p = projectWithFiles(120, 'sd-pgrestart-');
    const db = `${server.url}?schema=restart_start`;
    const log = join(p.dir, 'ran.txt');
    const loading = join(p.dir, 'loading');
    // Slow to load in the worker's processes only (SLOW_LOAD is given to the worker alone): the
    // server is stopped after the worker has read its batch and before its run's first look at it.
    writeFiles(p.dir, {
      'h.mjs': [
        "import { appendFileSync, writeFileSync } from 'node:fs';",
        'if (process.env.SLOW_LOAD) { writeFileSync(process.env.SLOW_LOAD, String(process.pid)); await new Promise((r) => setTimeout(r, 2500)); }',
        `export default async (task) => { appendFileSync(${JSON.stringify(log)}, task.key + '\\n'); await new Promise((r) => setTimeout(r, 50)); };`,
      ].join('\n'),
    });
    const run = startCli(['run', 'src', '--db', db, '--handler', 'h.mjs', '-j', '1', '--progress-interval', '200ms'], { cwd: p.dir, timeoutMs: 120_000 });
    await waitFor(() => ran(log).length >= 5, 60_000, 'the batch started');
    const worker = startCli(['worker', '--db', db, '-j', '1'], { cwd: p.dir, env: { SLOW_LOAD: loading }, timeoutMs: 120_000 });
    await waitFor(() => existsSync(loading), 60_000, "the worker's handler loading");
    server.stop();
    await sleep(3500);
    server.start();
    const [r, w] = await Promise.all([run.result, worker.result]);
    expect(r.code, r.stderr).toBe(0);
    expect(w.code, w.stderr).toBe(0);
    expect(w.stderr).toMatch(/the store is back/);
    expect(await statusCounts(p.dir, ['--db', db])).toEqual({ SUCCESS: 120 });
    expect(new Set(ran(log))).toEqual(new Set(p.keys));
    expect(processesWithEnv(p.dir)).toEqual([]);
  }, 150_000);

  it('a server down for longer than the limit: exit 4 naming the outage, no process left; a rerun once it is up finishes the batch', async () => {
    const { p, run, db, log } = startRun(200, 'restart_down', '0.2', { SPLITDANCE_RECONNECT_MS: '2000' });
    await waitFor(() => ran(log).length >= 8, 60_000, 'a few attempts run');
    server.stop();
    let r: CliResult;
    try {
      r = await run.result;
    } finally {
      server.start();
    }
    expect(r.signal, `hung: ${r.stderr}`).toBeNull();
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toMatch(new RegExp(`store stayed unavailable for .*PostgreSQL at 127\\.0\\.0\\.1:${server.port}`));
    expect(r.stderr).not.toMatch(/\n\s+at /);
    await sleep(200);
    expect(processesWithEnv(p.dir)).toEqual([]);
    const again = await runCli(['run', 'src', '--db', db, '--exec', `echo {} >> ${log}`, '-j', '4', '--quiet'], {
      cwd: p.dir,
      timeoutMs: 60_000,
    });
    expect(again.code, again.stderr).toBe(0);
    expect(await statusCounts(p.dir, ['--db', db])).toEqual({ SUCCESS: 200 });
  }, 150_000);
});
