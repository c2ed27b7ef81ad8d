import { beforeAll, describe, expect, it } from 'vitest';
import { runCli, sleep, startCli, waitFor } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query } from '../helpers/store.js';

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
  const r = await runCli(['status', '--json'], { cwd });
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as StatusJson;
}

const succeeded = (dir: string) => {
  try {
    return query<{ n: number }>(dbPathIn(dir), "SELECT count(*) AS n FROM tasks WHERE status = 'SUCCESS'")[0]!.n;
  } catch {
    return 0; // no store yet
  }
};

/**
 * The handler `runUntilPaused` runs: f002 takes 2.5 s, the others a moment. `pause` is noticed
 * within the coordinator's 1 s poll, so it lands while f002 runs and the batch cannot finish.
 */
const SLOW_THIRD = 'case {key} in f002.log) sleep 2.5;; *) sleep 0.02;; esac';

/** Starts `run`, pauses the batch once f000 and f001 succeeded; resolves when the run exited (3). */
async function runUntilPaused(dir: string): Promise<{ wallMs: number }> {
  const t0 = Date.now();
  const run = startCli(['run', 'src', '--exec', SLOW_THIRD, '-j', '1'], { cwd: dir });
  await waitFor(() => succeeded(dir) >= 2, 30_000, '2 tasks to succeed');
  expect((await runCli(['pause'], { cwd: dir })).code).toBe(0);
  const r = await run.result;
  expect(r.code, r.stderr).toBe(3);
  return { wallMs: Date.now() - t0 };
}

describe('status --json timing fields', () => {
  it('after a finished run: ISO times with ms, startedAt ≤ updatedAt, a positive rate, no ETA', async () => {
    const p = projectWithFiles(6);
    const before = Date.now();
    expect((await runCli(['run', 'src', '--exec', 'sleep 0.05', '-j', '2'], { cwd: p.dir })).code).toBe(0);
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
    const p = projectWithFiles(20);
    const r = await runCli(['run', 'src', '--exec', 'sleep 0.1', '-j', '1', '--max-runtime', '1500ms'], { cwd: p.dir });
    expect(r.code).toBe(3);
    const s = await statusJson(p.dir);
    expect(s.done).toBe(false);
    expect(s.succeeded).toBeGreaterThan(0);
    expect(s.succeeded).toBeLessThan(20);
    expect(s.tasksPerSecond!).toBeGreaterThan(0);
    expect(s.etaSeconds!).toBeGreaterThan(0);
  });
});

describe('status --json of a batch paused mid-way, then finished after an idle gap', () => {
  // One batch for both tests, in order: paused after f000–f002, then resumed 2.5 s later.
  const p = projectWithFiles(6);
  let firstRun = { wallMs: 0 };
  beforeAll(async () => {
    firstRun = await runUntilPaused(p.dir);
  });

  it('while paused: a positive rate and a positive ETA', async () => {
    const s = await statusJson(p.dir);
    expect(s.done).toBe(false);
    expect(s.succeeded).toBeGreaterThanOrEqual(3);
    expect(s.pending + s.retrying).toBeGreaterThan(0);
    expect(s.startedAt).toMatch(ISO_MS);
    expect(s.updatedAt).toMatch(ISO_MS);
    expect(Date.parse(s.startedAt!)).toBeLessThanOrEqual(Date.parse(s.updatedAt!));
    expect(s.tasksPerSecond!).toBeGreaterThan(0);
    expect(typeof s.etaSeconds).toBe('number');
    expect(s.etaSeconds!).toBeGreaterThan(0);
  });

  // Product bug: tasksPerSecond is finished / (last finish − first start) (cli/commands/status.ts,
  // batchStatus), so time the batch sat idle between two runs (paused, a nightly --max-runtime
  // window, a crash) dilutes the rate and inflates the ETA. SPEC §6: a rate is over time spent running.
  it.fails('once finished: tasksPerSecond counts time spent running, not the idle gap between the runs', async () => {
    await sleep(2500); // the batch sits paused: no time spent running
    expect((await runCli(['resume'], { cwd: p.dir })).code).toBe(0);
    const t0 = Date.now();
    expect((await runCli(['run', 'src'], { cwd: p.dir })).code).toBe(0);
    const secondWallMs = Date.now() - t0;
    const s = await statusJson(p.dir);
    expect(s.done).toBe(true);
    // The two runs' wall times bound the time spent running from above.
    expect(s.tasksPerSecond!).toBeGreaterThanOrEqual(6 / ((firstRun.wallMs + secondWallMs) / 1000));
  });
});
