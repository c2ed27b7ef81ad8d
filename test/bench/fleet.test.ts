import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { PG_URL } from '../helpers/pg.js';
import { missing } from '../helpers/services.js';

// The fleet simulator at its smallest (1 and 2 hosts, a few dozen tasks): its figures mean
// nothing here, only that it runs the real coordinator and store on PostgreSQL, checks the
// history and lands in the table. GNU parallel is the harness's own prerequisite.
const PARALLEL = !!process.env.CI || !missing('parallel', 'the benchmark harness runs');
const RUNNABLE = !!PG_URL && PARALLEL;

function bench(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(ROOT, 'bench/run.mjs')], { cwd: ROOT, env: { ...process.env, ...env }, timeout: 170_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr });
    });
  });
}

describe('BENCH_ONLY=fleet npm run bench (BENCH_SIZE=smoke)', () => {
  it.runIf(RUNNABLE)('runs 1 and 2 simulated hosts, reports server and client CPU per task, finds every task ran exactly once, and measures idle hosts', { timeout: 180_000 }, async () => {
    const r = await bench({ BENCH_ONLY: 'fleet', BENCH_SIZE: 'smoke', FLEET_HOSTS: '1,2', FLEET_TASKS: '40' });
    expect(r.code, r.stderr).toBe(0);
    const row = r.stdout.split('\n').find((l) => l.startsWith('| fleet |'));
    expect(row, r.stdout).toBeDefined();
    const cells = row!.slice(2, -2).split(' | ');
    expect(cells[2]).toMatch(/^1 host: \d+\/s \(server (\d+|NaN) µs\/task, client \d+ µs\/task\)<br>2 hosts: \d+\/s \(server (\d+|NaN) µs\/task, client \d+ µs\/task\)$/);
    expect(cells[6]).toContain('met (every task ran exactly once at every N: yes)');
    /** The rows of the table under the line that starts with `title`. */
    const section = (title: string) => {
      const lines = r.stdout.split('\n');
      const at = lines.findIndex((l) => l.startsWith(title));
      expect(at, r.stdout).toBeGreaterThanOrEqual(0);
      const table = lines.slice(at + 2);
      return table.slice(0, table.findIndex((l) => !l.startsWith('|'))).filter((l) => /^\| \d/.test(l));
    };
    // The per-N detail: one line per N with the claim round trips and the lock waits sampled.
    const detail = section('Fleet:');
    expect(detail, r.stdout).toHaveLength(2);
    for (const l of detail) expect(l).toMatch(/\| [\d.]+ \/ [\d.]+ \| [\d.]+ \/ \d+ \| yes \|$/);
    // Idle hosts at each N: what they cost the server, and when they noticed the batch end elsewhere.
    const idle = section('Idle hosts:');
    expect(idle, r.stdout).toHaveLength(2);
    for (const l of idle) expect(l).toMatch(/^\| [12] \| (-?\d+|—) \| \d+ \| ([\d.]+|—) \| \d+ \/ \d+ \|$/);
    if (r.stdout.includes('private cluster')) {
      // LISTEN/NOTIFY beside it, every notification delivered; idle `worker --follow` processes.
      const wake = section('LISTEN/NOTIFY, for comparison');
      expect(wake, r.stdout).toHaveLength(2);
      for (const l of wake) expect(l).toMatch(/^\| [12] \| -?\d+ \| -?\d+ \| \d+ \| yes \|$/);
      expect(r.stdout).toMatch(/Between batches: 8 `worker --follow` processes on a store with no work cost the server -?\d+ µs/);
    }
  });

  it.runIf(RUNNABLE)('in groups (FLEET_GROUP items per attempt): a row of its own, server CPU per item beside -n 1 at the same N, every item exactly once', { timeout: 180_000 }, async () => {
    const r = await bench({ BENCH_ONLY: 'fleet', BENCH_SIZE: 'smoke', FLEET_HOSTS: '1,2', FLEET_TASKS: '40', FLEET_GROUP: '8', FLEET_GROUP_TASKS: '160', FLEET_IDLE_MS: '0' });
    expect(r.code, r.stderr).toBe(0);
    const row = r.stdout.split('\n').find((l) => l.startsWith('| fleet, -n 8 |'));
    expect(row, r.stdout).toBeDefined();
    const cells = row!.slice(2, -2).split(' | ');
    expect(cells[1]).toMatch(/^160 no-op items per N, 8 per attempt, N hosts × 2 slots/);
    const host = (n: string) => `${n}: \\d+/s \\(server (\\d+|NaN) µs/item \\(-n 1: (\\d+|NaN)\\), client \\d+ µs/item\\)`;
    expect(cells[2]).toMatch(new RegExp(`^${host('1 host')}<br>${host('2 hosts')}$`));
    expect(cells[6]).toMatch(/^(?:met|not met) \(server CPU ≤ 100 µs per item at 2 hosts: (\d+|NaN) µs \(-n 1: (\d+|NaN) µs\)\)<br>met \(every item ran exactly once at every N: yes\)$/);
    // Its detail: a group's one claim serves 8 items, so far fewer claims per item than without.
    const claims = (title: string) => {
      const lines = r.stdout.split('\n');
      const at = lines.findIndex((l) => l.startsWith(title));
      expect(at, r.stdout).toBeGreaterThanOrEqual(0);
      return lines.slice(at + 4, at + 6).map((l) => Number(l.split(' | ')[4]));
    };
    const [one, grouped] = [claims('Fleet:'), claims('Fleet in groups of 8 items per attempt:')];
    for (const i of [0, 1]) expect(grouped[i]!, r.stdout).toBeLessThan(one[i]! / 2);
  });

  it.runIf(PARALLEL)('refuses a host count that is not a whole number ≥ 1 (exit 2, one line naming the setting)', async () => {
    const r = await bench({ BENCH_ONLY: 'fleet', BENCH_SIZE: 'smoke', FLEET_HOSTS: '1,x' });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toMatch(/^FLEET_HOSTS must be a comma-separated list of whole numbers ≥ 1, not "1,x"$/);
  });
});
