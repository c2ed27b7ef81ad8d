import { mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { slotWindow } from '../../src/pool/slot-window.js';
import { handler, runCli, sleep, startCli, waitFor } from '../helpers/cli.js';
import { liveProcesses, processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query, runningCount, sideEffects } from '../helpers/store.js';

const show = async (dir: string, key: string) => JSON.parse((await runCli(['show', key, '--json'], { cwd: dir })).stdout);

describe('timeouts', () => {
  it('--timeout kills a `sleep 1000` attempt and its group: TIMEOUT, retried, FAILED, no survivor', async () => {
    const p = projectWithFiles(1);
    const marker = `1000.${process.pid}1`;
    const r = await runCli(['run', 'src', '--exec', `sleep ${marker}`, '--timeout', '1s', '--retries', '1', '--backoff', '100ms'], {
      cwd: p.dir,
    });
    expect(r.code).toBe(1);
    const t = await show(p.dir, 'f000.log');
    expect(t.status).toBe('FAILED');
    expect(t.attempts.map((a: { outcome: string }) => a.outcome)).toEqual(['TIMEOUT', 'TIMEOUT']);
    expect(t.attempts[0].durationMs).toBeGreaterThanOrEqual(1000);
    expect(t.attempts[0].durationMs).toBeLessThan(5000);
    await waitFor(() => liveProcesses(`sleep ${marker}`).length === 0, 1000, 'no sleep survivor');
  });

  it('an attempt ignoring SIGTERM is killed with SIGKILL, including its background children', async () => {
    const p = projectWithFiles(1);
    const marker = `1000.${process.pid}2`;
    const r = await runCli(
      ['run', 'src', '--exec', `trap '' TERM; sleep ${marker} & sleep ${marker}; wait`, '--timeout', '500ms', '--retries', '0'],
      { cwd: p.dir },
    );
    expect(r.code).toBe(1);
    const t = await show(p.dir, 'f000.log');
    expect(t.attempts[0].outcome).toBe('TIMEOUT');
    await waitFor(() => liveProcesses(`sleep ${marker}`).length === 0, 1000, 'no sleep survivor');
  });

  it('a module handler that ignores ctx.signal is killed with its worker and recorded TIMEOUT', async () => {
    const p = projectWithFiles(2);
    const r = await runCli(['run', 'src', '--handler', handler('hang'), '--timeout', '300ms', '--retries', '0', '-j', '1'], { cwd: p.dir });
    expect(r.code).toBe(1);
    const rows = query<{ outcome: string }>(dbPathIn(p.dir), 'SELECT outcome FROM attempts ORDER BY id');
    // The attempt queued behind the first (SPEC §5) never started when its worker was killed: INTERRUPTED, not counted.
    expect(rows.map((x) => x.outcome).filter((o) => o !== 'INTERRUPTED')).toEqual(['TIMEOUT', 'TIMEOUT']);
    expect(rows.filter((x) => x.outcome === 'INTERRUPTED').length).toBeLessThanOrEqual(1);
    expect(query(dbPathIn(p.dir), 'SELECT status, attempts FROM tasks')).toEqual([
      { status: 'FAILED', attempts: 1 },
      { status: 'FAILED', attempts: 1 },
    ]);
  });
});

describe('handlers that kill their worker', () => {
  for (const mode of ['exit0', 'exit1', 'throw', 'reject', 'abort', 'kill']) {
    it(`${mode}: never SUCCESS, recorded CRASHED, the worker is replaced, other tasks still run`, async () => {
      const p = projectWithFiles(3);
      const r = await runCli(['run', 'src', '--handler', handler('crash'), '--retries', '1', '--backoff', '10ms', '-j', '2'], {
        cwd: p.dir,
        env: { CRASH_MODE: mode },
      });
      expect(r.code).toBe(1);
      const rows = query<{ status: string; attempts: number }>(dbPathIn(p.dir), 'SELECT status, attempts FROM tasks');
      expect(rows.every((t) => t.status === 'FAILED' && t.attempts === 2)).toBe(true);
      // Attempts queued behind a crashing one never started: INTERRUPTED, not counted (SPEC §5).
      const outcomes = query<{ outcome: string; n: number }>(dbPathIn(p.dir), 'SELECT outcome, count(*) AS n FROM attempts GROUP BY outcome');
      expect(outcomes.map((o) => o.outcome).filter((o) => o !== 'INTERRUPTED')).toEqual(['CRASHED']);
      expect(outcomes.find((o) => o.outcome === 'CRASHED')!.n).toBe(6);
      const workers = query<{ n: number }>(dbPathIn(p.dir), 'SELECT count(DISTINCT pid) AS n FROM attempts');
      expect(workers[0]!.n).toBeGreaterThan(2); // replacements ran the later attempts
    });
  }
});

describe('coordinator SIGKILL', () => {
  it('resumes at once after random kills: nothing lost, repeats only of running tasks, no orphans', async () => {
    const p = projectWithFiles(60);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '40' };
    const args = ['run', 'src', '--handler', handler('record'), '-j', '2'];
    let kills = 0;
    for (const delay of [700, 950, 1200, 1500]) {
      const child = startCli(args, { cwd: p.dir, env });
      await sleep(delay);
      child.kill('SIGKILL');
      await child.result;
      kills++;
      await waitFor(() => processesWithEnv(p.log).length === 0, 1500, 'workers to exit after their coordinator died');
    }
    const started = Date.now();
    const final = await runCli(args, { cwd: p.dir, env });
    expect(final.code, final.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(15_000); // no 30 s lease wait
    const rows = query<{ task_key: string; status: string; attempts: number }>(dbPathIn(p.dir), 'SELECT task_key, status, attempts FROM tasks');
    expect(rows).toHaveLength(60);
    expect(rows.every((t) => t.status === 'SUCCESS')).toBe(true);
    const effects = sideEffects(p.log);
    expect(new Set(effects.map((e) => e.key)).size).toBe(60);
    // A kill charges at most the attempts in flight (SPEC §5): every slot's window, its running
    // attempt and those queued behind it, all claimed and so all LOST. The window follows from
    // the handler's duration (40 ms: one queued) and is the same however loaded the machine is,
    // since a slower attempt only shrinks it. A side effect repeats only for a LOST attempt.
    const window = Math.max(slotWindow({ avgMs: null, headSince: 0 }, 0, null, 0), slotWindow({ avgMs: 40, headSince: 0 }, 1, null, 0));
    const lost = query<{ n: number }>(dbPathIn(p.dir), "SELECT count(*) AS n FROM attempts WHERE outcome = 'LOST'")[0]!.n;
    expect(lost).toBeLessThanOrEqual(kills * 2 * window);
    expect(effects.length - 60).toBeLessThanOrEqual(lost);
    // No attempt left open; a LOST one's end is unknown (NULL), never its takeover time.
    expect(query(dbPathIn(p.dir), "SELECT 1 FROM attempts WHERE outcome IS NULL")).toEqual([]);
    expect(query(dbPathIn(p.dir), "SELECT 1 FROM attempts WHERE outcome = 'LOST' AND (ended_at IS NOT NULL OR duration_ms IS NOT NULL)")).toEqual([]);
  });

  it('two runs started together on one store run each task exactly once and both exit 0', async () => {
    const p = projectWithFiles(80);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '20', CANARY_DIR: p.dir };
    const args = ['run', 'src', '--handler', handler('record'), '-j', '2'];
    const [a, b] = await Promise.all([startCli(args, { cwd: p.dir, env }).result, startCli(args, { cwd: p.dir, env }).result]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    expect(a.stderr + b.stderr).not.toMatch(/locked|busy/i);
    const effects = sideEffects(p.log);
    expect(effects).toHaveLength(80);
    expect(new Set(effects.map((e) => e.key)).size).toBe(80);
    const owners = query<{ n: number }>(dbPathIn(p.dir), 'SELECT count(DISTINCT owner) AS n FROM attempts');
    expect(owners[0]!.n).toBe(2);
  });
});

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
    const rows = query<{ status: string; attempts: number }>(dbPathIn(p.dir), 'SELECT status, attempts FROM tasks');
    expect(rows.filter((t) => t.status === 'RUNNING')).toEqual([]);
    expect(rows.every((t) => t.status === 'PENDING' && t.attempts === 0)).toBe(true);
    // The two running, and those queued behind them (given back unstarted): all INTERRUPTED.
    const outcomes = query<{ outcome: string }>(dbPathIn(p.dir), 'SELECT outcome FROM attempts');
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
    await waitFor(() => query<{ n: number }>(dbPathIn(p.dir), "SELECT count(*) AS n FROM tasks WHERE status = 'RUNNING'")[0]!.n === 4, 20_000, 'two queued behind them');
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
    const rows = query<{ status: string; attempts: number }>(dbPathIn(p.dir), 'SELECT status, attempts FROM tasks');
    expect(rows.every((t) => t.status === 'PENDING' && t.attempts === 0)).toBe(true);
    const outcomes = query<{ outcome: string }>(dbPathIn(p.dir), 'SELECT outcome FROM attempts');
    expect(outcomes.length).toBeGreaterThanOrEqual(2);
    expect(outcomes.every((o) => o.outcome === 'INTERRUPTED')).toBe(true);
  });

  it('SIGTERM lets short attempts finish within the grace and exits 143', async () => {
    const p = projectWithFiles(10);
    const child = startCli(['run', 'src', '--exec', 'sleep 0.6', '-j', '2', '--grace', '5s'], { cwd: p.dir });
    await waitFor(() => sleeps(`sleep 0.6`) === 2, 20_000, 'two running attempts');
    child.kill('SIGTERM');
    const r = await child.result;
    expect(r.code).toBe(143);
    const rows = query<{ status: string }>(dbPathIn(p.dir), 'SELECT status FROM tasks');
    expect(rows.filter((t) => t.status === 'SUCCESS').length).toBe(2); // the two running ones finished in the grace
    expect(rows.filter((t) => t.status === 'RUNNING')).toEqual([]);
    // Those queued behind them were given back unstarted at the signal: not counted.
    const interrupted = query<{ error: string; attempts: number }>(
      dbPathIn(p.dir),
      "SELECT a.error, t.attempts FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.outcome = 'INTERRUPTED'",
    );
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
    const rows = query<{ status: string; attempts: number }>(dbPathIn(p.dir), 'SELECT status, attempts FROM tasks');
    // The running ones finished in the grace (a pair may have started as the signal came).
    expect(rows.filter((t) => t.status === 'SUCCESS').length).toBeGreaterThanOrEqual(2);
    expect(rows.filter((t) => t.status === 'RUNNING')).toEqual([]);
    expect(rows.filter((t) => t.status === 'PENDING').length).toBeGreaterThan(0);
    expect(rows.filter((t) => t.status === 'PENDING').every((t) => t.attempts === 0)).toBe(true);
    expect(query(dbPathIn(p.dir), "SELECT 1 FROM attempts WHERE outcome = 'LOST'")).toEqual([]);
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
    const rows = query<{ status: string; attempts: number }>(dbPathIn(p.dir), 'SELECT status, attempts FROM tasks');
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
