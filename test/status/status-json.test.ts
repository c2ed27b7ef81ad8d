import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RATE_WINDOW } from '../../src/status/busy-rate.js';
import { sleep } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';

// SPEC §6: `status --json` has `startedAt`, `updatedAt`, `tasksPerSecond`, `etaSeconds`; a rate
// shown anywhere is over time spent running, not since the batch was created.

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

interface StatusJson {
  total: number;
  pending: number;
  retrying: number;
  running: number;
  succeeded: number;
  done: boolean;
  startedAt: string | null;
  updatedAt: string | null;
  tasksPerSecond: number | null;
  etaSeconds: number | null;
}

async function statusJson(cwd: string): Promise<StatusJson> {
  const r = await mainIn(cwd, ['status', '--json']);
  const s = JSON.parse(r.stdout) as StatusJson & { failed: number; cancelled: number };
  // The batch's verdict (SPEC §6): 0 all SUCCESS, 1 done with failures, 3 not done yet.
  expect(r.code).toBe(!s.done ? 3 : s.failed + s.cancelled > 0 ? 1 : 0);
  return s;
}


/** f003–f005 fail (exit 1) until `marker` exists; every task takes `seconds`. */
const failUntil = (marker: string, seconds = 0.02) =>
  `case {key} in f003.log|f004.log|f005.log) [ -e '${marker}' ] || { echo not yet >&2; exit 1; };; esac; sleep ${seconds}`;

describe('status --json timing fields', () => {
  it('after a finished run: ISO times with ms, startedAt ≤ updatedAt, a positive rate, no ETA', async () => {
    const p = projectWithFiles(6);
    const before = Date.now();
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'sleep 0.05', '-j', '2'])).code).toBe(0);
    const wallMs = Date.now() - before;
    const s = await statusJson(p.dir);
    expect(s.done).toBe(true);
    expect(s.startedAt).toMatch(ISO_MS);
    expect(s.updatedAt).toMatch(ISO_MS);
    const started = Date.parse(s.startedAt!);
    const updated = Date.parse(s.updatedAt!);
    expect(started).toBeGreaterThanOrEqual(before);
    expect(started).toBeLessThanOrEqual(updated);
    expect(updated).toBeLessThanOrEqual(Date.now());
    expect(typeof s.tasksPerSecond).toBe('number');
    // The work ran inside the run's wall time, so the rate over time spent running is at least this.
    expect(s.tasksPerSecond!).toBeGreaterThanOrEqual(6 / (wallMs / 1000));
    expect([0, null]).toContain(s.etaSeconds);
  });

  it('after --max-runtime stopped the run: a positive ETA while tasks remain', async () => {
    // At most 15 of 30 tasks of 0.1 s fit in 1.5 s on one worker.
    const p = projectWithFiles(30);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'sleep 0.1', '-j', '1', '--max-runtime', '1500ms']);
    expect(r.code).toBe(3);
    const s = await statusJson(p.dir);
    expect(s.done).toBe(false);
    expect(s.succeeded).toBeGreaterThan(0);
    expect(s.succeeded).toBeLessThanOrEqual(15);
    expect(s.tasksPerSecond!).toBeGreaterThan(0);
    expect(s.etaSeconds!).toBeGreaterThan(0);
  });
});

describe('status --json mid-batch and after an idle gap', () => {
  /** 6 tasks, 3 succeeded and 3 waiting an hour for their retry: `run --no-wait` leaves it mid-batch (exit 3). */
  async function midBatch(seconds: number): Promise<StatusJson> {
    const p = projectWithFiles(6);
    const exec = failUntil(join(p.dir, 'never'), seconds);
    const run = await mainIn(p.dir, ['run', 'src', '--exec', exec, '--retries', '1', '--backoff', '1h', '--no-wait', '-j', '1']);
    expect(run.code).toBe(3);
    const s = await statusJson(p.dir);
    expect(s).toMatchObject({ done: false, succeeded: 3, retrying: 3 });
    return s;
  }

  it('mid-batch (retries delayed, --no-wait): times, a positive rate and a positive ETA', async () => {
    // Tasks of 0.5 s: the 3 left take over a second at the batch's rate.
    const s = await midBatch(0.5);
    expect(s.startedAt).toMatch(ISO_MS);
    expect(s.updatedAt).toMatch(ISO_MS);
    expect(Date.parse(s.startedAt!)).toBeLessThanOrEqual(Date.parse(s.updatedAt!));
    expect(s.tasksPerSecond!).toBeGreaterThan(0);
    expect(typeof s.etaSeconds).toBe('number');
    expect(s.etaSeconds!).toBeGreaterThan(0);
  });

  // etaSeconds 0 means "done": while tasks remain (here 3, their retries an hour away) it is at
  // least 1, however fast the rate (it was Math.round(open / rate), 0 for fast tasks).
  it('mid-batch with fast tasks: etaSeconds is still positive, never the 0 of a finished batch', async () => {
    const s = await midBatch(0.02);
    expect(s.tasksPerSecond!).toBeGreaterThan(0);
    expect(s.etaSeconds!).toBeGreaterThan(0);
  });

  it('a batch with more attempts than the rate window: the rate is still over time spent running', async () => {
    const p = projectWithFiles(700); // more than the 500 recent attempts status reads
    const t0 = Date.now();
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true', '-j', '2'])).code).toBe(0);
    const wallMs = Date.now() - t0;
    await sleep(Math.max(2000, wallMs)); // idle, at least as long as the run: must not count
    const s = await statusJson(p.dir);
    expect(s).toMatchObject({ done: true, succeeded: 700, etaSeconds: 0 });
    // The rate is read from the last RATE_WINDOW (500) attempts, all of which started and ended
    // inside the run's wall time, so their running time is at most wallMs: the rate is at least
    // 500 per wallMs. (Not 700 per wallMs: the last 500 may have run slower than the first 200.)
    // Counting the idle time after the run (at least wallMs) would put it below that bound.
    expect(s.tasksPerSecond!).toBeGreaterThanOrEqual(RATE_WINDOW / (wallMs / 1000));
  });
});
