import { mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, sleep, startCli, waitFor } from '../helpers/cli.js';
import { liveProcesses, processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { runningTasks, waitUntil } from '../helpers/json-views.js';
import { dbPathIn, runningCount, storedAttempts, storedTasks } from '../helpers/store.js';

// Signals sent to the CLI process (SPEC §7): SIGINT, SIGTERM, SIGHUP drain or stop a run.

/** Live `sleep` commands whose line holds `marker` (not the coordinator, whose arguments name them too). */
const sleeps = (marker: string) => liveProcesses(marker).filter((l) => /^\s*\d+\s+\S+\s+sleep /.test(l)).length;

describe('signals', () => {
  it('SIGINT drains running attempts, returns the rest, exit 130; nothing RUNNING, nothing charged', async () => {
    const p = projectWithFiles(20);
    const marker = `sleep 2.${process.pid}3`;
    const child = startCli(['run', 'src', '--exec', marker, '-j', '2', '--grace', '300ms'], { cwd: p.dir });
    await waitFor(() => sleeps(marker) === 2, 20_000, 'two running attempts');
    child.kill('SIGINT');
    const r = await child.result;
    expect(r.code).toBe(130);
    const rows = await storedTasks(dbPathIn(p.dir));
    expect(rows.filter((t) => t.status === 'RUNNING')).toEqual([]);
    expect(rows.every((t) => t.status === 'PENDING' && t.attempts === 0)).toBe(true);
    // The two running, and those queued behind them (given back unstarted): all INTERRUPTED.
    const outcomes = await storedAttempts(dbPathIn(p.dir));
    expect(outcomes.length).toBeGreaterThanOrEqual(2);
    expect(outcomes.every((o) => o.outcome === 'INTERRUPTED')).toBe(true);
    await waitFor(() => liveProcesses(marker).length === 0, 2000, 'the killed attempts to be gone');
  });

  // Issue 41: at -j 2 the message said "4 running attempts": the queued ones counted as running (SPEC §7).
  it('SIGINT at -j 2 says 2 running attempts, and the queued ones apart; each line fits 80 columns', async () => {
    const p = projectWithFiles(20);
    const marker = `sleep 2.${process.pid}4`;
    const child = startCli(['run', 'src', '--exec', marker, '-j', '2', '--grace', '300ms'], { cwd: p.dir });
    await waitFor(() => sleeps(marker) === 2, 20_000, 'two running attempts');
    await waitUntil(async () => (await runningTasks(p.dir)) === 4, 20_000, 'two queued behind them');
    child.kill('SIGINT');
    const r = await child.result;
    expect(r.code).toBe(130);
    expect(r.stderr).toContain('SIGINT: no new tasks; waiting up to 300ms for 2 running attempts\n');
    expect(r.stderr).toContain('2 queued attempts go back unstarted; send SIGINT again to stop at once\n');
    for (const line of r.stderr.split('\n').filter((l) => /^SIGINT:|send SIGINT again/.test(l))) expect(line.length).toBeLessThanOrEqual(80);
  });

  it('after the grace, a module handler sees ctx.signal fire; its attempt is INTERRUPTED, not charged', async () => {
    const p = projectWithFiles(6);
    const markers = join(p.dir, 'markers');
    mkdirSync(markers);
    const child = startCli(['run', 'src', '--handler', handler('aborts'), '-j', '2', '--grace', '300ms'], { cwd: p.dir, env: { MARKER_DIR: markers } });
    await waitFor(() => runningCount(dbPathIn(p.dir)) >= 2, 20_000, 'two running attempts');
    await sleep(300); // both started (each worker's first); those queued behind them never start
    child.kill('SIGINT');
    const r = await child.result;
    expect(r.code).toBe(130);
    expect(readdirSync(markers).sort()).toEqual(['f000.log', 'f001.log']);
    expect(readFileSync(join(markers, 'f000.log'), 'utf8')).toBe('aborted: shutdown');
    const rows = await storedTasks(dbPathIn(p.dir));
    expect(rows.every((t) => t.status === 'PENDING' && t.attempts === 0)).toBe(true);
    const outcomes = await storedAttempts(dbPathIn(p.dir));
    expect(outcomes.length).toBeGreaterThanOrEqual(2);
    expect(outcomes.every((o) => o.outcome === 'INTERRUPTED')).toBe(true);
  });

  it('SIGTERM lets short attempts finish within the grace and exits 143', async () => {
    const p = projectWithFiles(10);
    const marker = `sleep 0.6${process.pid}`; // unique: another suite's sleeps (two suites at once) do not count
    const child = startCli(['run', 'src', '--exec', marker, '-j', '2', '--grace', '5s'], { cwd: p.dir });
    await waitFor(() => sleeps(marker) === 2, 20_000, 'two running attempts');
    child.kill('SIGTERM');
    const r = await child.result;
    expect(r.code).toBe(143);
    const rows = await storedTasks(dbPathIn(p.dir));
    expect(rows.filter((t) => t.status === 'SUCCESS').length).toBe(2); // the two running ones finished in the grace
    expect(rows.filter((t) => t.status === 'RUNNING')).toEqual([]);
    // Those queued behind them were given back unstarted at the signal: not counted.
    const charged = new Map(rows.map((t) => [t.key, t.attempts]));
    const interrupted = (await storedAttempts(dbPathIn(p.dir))).filter((a) => a.outcome === 'INTERRUPTED').map((a) => ({ error: a.error, attempts: charged.get(a.key) }));
    for (const a of interrupted) expect(a).toEqual({ error: 'INTERRUPTED: taken back unstarted as the run stopped; not counted', attempts: 0 });
  });

  it('SIGHUP (a closed terminal) is a shutdown like SIGTERM: running attempts finish, the rest is not charged, exit 143', async () => {
    const p = projectWithFiles(10);
    const marker = `sleep 0.7${process.pid}`; // unique: other suites' sleeps do not count
    const child = startCli(['run', 'src', '--exec', marker, '-j', '2', '--grace', '5s'], { cwd: p.dir });
    await waitFor(() => sleeps(marker) === 2, 20_000, 'two running attempts');
    child.kill('SIGHUP');
    const r = await child.result;
    expect(r.signal).toBeNull(); // not killed by it
    expect(r.code).toBe(143);
    expect(r.stderr).toMatch(/SIGHUP: no new tasks; waiting up to 5s/);
    // The summary names the signal received (SPEC gives SIGHUP no exit code of its own: 143, as SIGTERM).
    expect(r.stderr).toMatch(/^hung up \(SIGHUP\); run again to resume: /m);
    expect(r.stderr).not.toMatch(/SIGTERM/);
    const rows = await storedTasks(dbPathIn(p.dir));
    // The running ones finished in the grace (a pair may have started as the signal came).
    expect(rows.filter((t) => t.status === 'SUCCESS').length).toBeGreaterThanOrEqual(2);
    expect(rows.filter((t) => t.status === 'RUNNING')).toEqual([]);
    expect(rows.filter((t) => t.status === 'PENDING').length).toBeGreaterThan(0);
    expect(rows.filter((t) => t.status === 'PENDING').every((t) => t.attempts === 0)).toBe(true);
    expect((await storedAttempts(dbPathIn(p.dir))).filter((a) => a.outcome === 'LOST')).toEqual([]);
  });

  it('a second SIGINT kills at once instead of waiting for the grace', async () => {
    const p = projectWithFiles(4);
    const child = startCli(['run', 'src', '--exec', 'sleep 30', '-j', '2', '--grace', '60s'], { cwd: p.dir });
    await waitFor(() => runningCount(dbPathIn(p.dir)) >= 2, 20_000, 'two running attempts');
    child.kill('SIGINT');
    await sleep(200);
    const t0 = Date.now();
    child.kill('SIGINT');
    const r = await child.result;
    expect(r.code).toBe(130);
    // At once, not after the 60 s --grace a first SIGINT alone would give them.
    expect(Date.now() - t0).toBeLessThan(30_000);
    const rows = await storedTasks(dbPathIn(p.dir));
    expect(rows.every((t) => t.status === 'PENDING' && t.attempts === 0)).toBe(true);
  });
});

describe('signals during start-up', () => {
  it('SIGTERM before any task starts exits 143 cleanly with no orphan workers', async () => {
    const p = projectWithFiles(3);
    const child = startCli(['run', 'src', '--handler', handler('slow')], { cwd: p.dir, env: { SLEEP_MS: '50', MARK: p.dir } });
    await waitFor(() => processesWithEnv(p.dir).some((pid) => pid !== child.pid), 20_000, 'workers being forked');
    child.kill('SIGTERM');
    const r = await child.result;
    expect(r.code, r.stderr).toBe(143);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 2000, 'workers to exit');
  });
});
