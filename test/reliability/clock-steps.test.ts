import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startCli, waitFor } from '../helpers/cli.js';
import { fakeClock } from '../helpers/faketime.js';
import { missing } from '../helpers/services.js';
import { projectWithFiles } from '../helpers/project.js';
import { storedTasks, waitUntil } from '../helpers/json-views.js';
import { attemptsIn, tasksIn } from '../helpers/read-store.js';
import { dbPathIn } from '../helpers/store.js';

// R35: durations inside a run are measured on the monotonic clock. The run's own wall clock
// (libfaketime on that process tree alone; never the system's) is stepped while it waits out a
// backoff or watches a silent attempt: a step back must not stretch a backoff or disable
// --heartbeat-timeout, a step forward must not skip a backoff, and the summary never shows a
// negative time.

/** The run's task is back PENDING with its retry scheduled (committed before the clock steps); false while there is no store yet. */
const retryWaiting = (dir: string) => async () =>
  (await storedTasks(dbPathIn(dir))).filter((t) => t.status === 'PENDING' && t.attempts === 1).length === 1;

/** The run's summary took seconds (or less), as it did: no negative time, no hour a step added. */
const SUMMARY_IN_SECONDS = /^done: 1 succeeded, 0 failed of 1 in \d+(\.\d+)?(ms|s) /m;

/** A command that fails its first attempt and succeeds afterwards, marking each attempt in `marks`. */
const failOnce = (marks: string) => `test -e ${marks}/{name}.1 && { touch ${marks}/{name}.2; exit 0; }; touch ${marks}/{name}.1; echo once >&2; exit 1`;

describe.skipIf(missing('faketime', 'the clock-step tests'))('clock steps of the running process (R35)', () => {
  it('a step back of 10 min during a 2 s backoff: the retry still runs about 2 s later, and the summary shows no negative time', async () => {
    const p = projectWithFiles(1, 'sd-clockback-');
    const marks = join(p.dir, 'marks');
    mkdirSync(marks);
    const clock = fakeClock(p.dir);
    const run = startCli(['run', 'src', '--exec', failOnce(marks), '--retries', '1', '--backoff', '2s', '--jitter', '0', '-j', '1'], {
      cwd: p.dir,
      env: clock.env,
      timeoutMs: 60_000,
    });
    await waitUntil(retryWaiting(p.dir), 30_000, 'the first attempt failed and its retry waits');
    clock.step('-10m');
    const r = await run.result;
    expect(r.signal, `the backoff followed the wall clock back: ${r.stderr}`).toBeNull();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(SUMMARY_IN_SECONDS);
    const [t] = (await tasksIn(dbPathIn(p.dir))).map(({ status, attempts }) => ({ status, attempts }));
    expect(t).toEqual({ status: 'SUCCESS', attempts: 2 });
  }, 90_000);

  it('a step forward of 1 h during a 6 s backoff: the retry does not start early', async () => {
    const p = projectWithFiles(1, 'sd-clockfwd-');
    const marks = join(p.dir, 'marks');
    mkdirSync(marks);
    const clock = fakeClock(p.dir);
    const run = startCli(['run', 'src', '--exec', failOnce(marks), '--retries', '1', '--backoff', '6s', '--jitter', '0', '-j', '1'], {
      cwd: p.dir,
      env: clock.env,
      timeoutMs: 60_000,
    });
    const first = join(marks, `${p.keys[0]}.1`);
    await waitUntil(retryWaiting(p.dir), 30_000, 'the first attempt failed and its retry waits');
    // The marks are stamped by the kernel's clock, which no step here touches.
    const failedAt = statSync(first).mtimeMs;
    clock.step('+1h');
    const r = await run.result;
    expect(r.code, r.stderr).toBe(0);
    const retriedAt = statSync(join(marks, `${p.keys[0]}.2`)).mtimeMs;
    // The attempt failed just after its mark; its retry may not start before the 6 s backoff.
    expect(retriedAt - failedAt).toBeGreaterThanOrEqual(6000 - 50);
    expect(r.stderr).toMatch(SUMMARY_IN_SECONDS);
  }, 90_000);

  it('a step back of 1 h while an attempt is silent: --heartbeat-timeout still kills it (TIMEOUT), it does not run to the end', async () => {
    const p = projectWithFiles(1, 'sd-clocksilent-');
    const started = join(p.dir, 'started');
    const clock = fakeClock(p.dir);
    const run = startCli(['run', 'src', '--exec', `touch ${started}; sleep 30`, '--heartbeat-timeout', '3s', '--retries', '0', '-j', '1'], {
      cwd: p.dir,
      env: clock.env,
      timeoutMs: 60_000,
    });
    await waitFor(() => existsSync(started), 30_000, 'the attempt started');
    clock.step('-1h');
    const r = await run.result;
    expect(r.code, r.stderr).toBe(1);
    const attempts = (await attemptsIn(dbPathIn(p.dir))).map(({ outcome, error }) => ({ outcome, error }));
    expect(attempts).toEqual([{ outcome: 'TIMEOUT', error: expect.stringMatching(/no heartbeat for 3s/) }]);
    expect(r.stderr).toMatch(/^finished with failures: 0 succeeded, 1 failed of 1 in \d+(\.\d+)?(ms|s) /m);
  }, 90_000);
});
