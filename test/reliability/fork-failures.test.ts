import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, ROOT, handler, startCli, waitFor, type CliResult } from '../helpers/cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { missing } from '../helpers/services.js';
import { statusCounts } from '../helpers/json-views.js';
import { logEntries } from '../helpers/store.js';

// 600 slots are cheap only as spawner helpers (600 Node workers would take minutes here).
const helperBuilt = !missing('cc', 'the -j 600 fork-failure test') && existsSync(join(ROOT, 'dist/native/spawner'));

// RELIABILITY R34: the machine will not give a run the processes or descriptors it asks for
// — `ulimit -n` too low for -j, a cgroup's pids.max reached. No hang, no stack trace, no
// orphan: a pool that cannot grow runs with the workers it could start and says so; one
// left with none exits 4 with one line.

/** The built CLI under `ulimit -n <fds>`, through a real shell. */
function runWithFileLimit(fds: number, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<CliResult> {
  const quoted = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('/bin/sh', ['-c', `ulimit -n ${fds} && exec ${quoted}`], { cwd, env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b) => (stdout += b));
  child.stderr.on('data', (b) => (stderr += b));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((done) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout, stderr });
    }),
  );
}

const noStackTrace = (text: string) => expect(text).not.toMatch(/\n\s+at |node:internal|Unhandled 'error'/);

describe('too few file descriptors for -j (R34)', () => {
  it('module handlers: the pool runs with the workers it could start, says so, and finishes', async () => {
    const p = projectWithFiles(30);
    const r = await runWithFileLimit(72, ['run', 'src', '--handler', handler('ok'), '-j', '30'], p.dir, { SD_MARK: p.dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/started \d+ of 30 workers and runs with those: could not start a worker process: too many open files \(EMFILE\); raise the limit \(ulimit -n\) or lower -j/);
    noStackTrace(r.stderr);
    expect(await statusCounts(p.dir)).toEqual({ SUCCESS: 30 });
    await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'no worker left behind');
  }, 90_000);

  it.skipIf(!helperBuilt)('--exec with -j 600 under the common ulimit -n 1024: no unhandled error, the run finishes with the helpers it could start', async () => {
    const p = projectWithFiles(600);
    const r = await runWithFileLimit(1024, ['run', 'src', '--exec', 'true', '-j', '600'], p.dir, { SD_MARK: p.dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/started \d+ of 600 workers and runs with those: could not start a worker process: too many open files \(EMFILE\)/);
    noStackTrace(r.stderr);
    expect(await statusCounts(p.dir)).toEqual({ SUCCESS: 600 });
    await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'no helper left behind');
  }, 90_000);
});

// cgroup v1's pids controller (as on this project's CI machine); v2 needs a delegated subtree.
const PIDS = '/sys/fs/cgroup/pids';
const canLimitPids = !missing('root', 'the pids.max test') && existsSync(join(PIDS, 'cgroup.procs'));

describe('a cgroup whose pids.max is reached (R34)', () => {
  const made: string[] = [];
  afterEach(() => {
    for (const dir of made.splice(0)) {
      try {
        rmdirSync(dir);
      } catch {
        // still has a process: left for the system to clean up
      }
    }
  });

  it.skipIf(!canLimitPids)('workers that die cannot be replaced: the run goes on with the others and says so, then exits 4 with one line when none is left', async () => {
    const p = projectWithFiles(8);
    const cgroup = join(PIDS, `splitdance-test-${process.pid}-${Date.now()}`);
    mkdirSync(cgroup);
    made.push(cgroup);
    const run = startCli(['run', 'src', '--handler', handler('record'), '-j', '2', '--retries', '5', '--backoff', '10ms'], {
      cwd: p.dir,
      env: { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '1500', SD_MARK: p.dir },
    });
    let stderr = '';
    run.stderr!.on('data', (b) => (stderr += b));
    const started = () => [...new Set(logEntries(p.log).filter((e) => e.type === 'start').map((e) => (e as { pid: number }).pid))];
    await waitFor(() => started().length === 2, 20_000, 'both workers running an attempt');
    // The coordinator, with every thread it has, into a cgroup that allows not one more.
    writeFileSync(join(cgroup, 'cgroup.procs'), String(run.pid));
    writeFileSync(join(cgroup, 'pids.max'), readFileSync(join(cgroup, 'pids.current'), 'utf8').trim());

    const [first, second] = started();
    process.kill(first!, 'SIGKILL');
    await waitFor(() => stderr.includes('could not be replaced'), 10_000, 'the run to say it goes on with one worker fewer');
    const ran = () => logEntries(p.log).filter((e) => e.type === 'start' && (e as { pid: number }).pid === second).length;
    const before = ran();
    await waitFor(() => ran() > before, 20_000, 'the worker left to take the next attempt');
    process.kill(second!, 'SIGKILL');

    const r = await run.result;
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain("a worker that died could not be replaced: could not start a worker process: the system refused another process (EAGAIN: a process limit such as ulimit -u or a cgroup's pids.max)");
    const last = r.stderr.trim().split('\n').at(-1)!;
    expect(last).toMatch(/^splitdance: error: could not start a worker process: the system refused another process \(EAGAIN/);
    noStackTrace(r.stderr);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'no worker left behind');
  }, 90_000);
});
