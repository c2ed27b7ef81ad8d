import { execFile, spawnSync } from 'node:child_process';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

const HARNESS = join(ROOT, 'bench/run.mjs');
const RESULTS = join(ROOT, 'bench/results.md');
// GNU parallel is the harness's prerequisite. Without it the runs are skipped, except under
// CI, which installs it: there they run, and fail loudly if it is missing.
const RUNNABLE = spawnSync('parallel', ['--version'], { stdio: 'ignore' }).status === 0 || !!process.env.CI;
if (!RUNNABLE) console.warn('GNU parallel is not installed: skipping the benchmark harness runs (apt-get install parallel)');

/** Runs `npm run bench`'s script (the build is already there) with extra environment. */
function bench(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [HARNESS], { cwd: ROOT, env: { ...process.env, ...env }, timeout: 150_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr });
    });
    child.stdin?.end();
  });
}

/** A failed benchmark keeps its work files for inspection; the tests remove them. */
function removeKeptWork(stderr: string): void {
  const kept = /work files kept in (\S+)\)/.exec(stderr);
  if (kept) rmSync(kept[1]!, { recursive: true, force: true });
}

// The harness itself, at tiny sizes: its figures mean nothing here, only that every
// benchmark runs, checks its work and lands in the table. (Timing goals live in `npm run bench`.)
describe('npm run bench (BENCH_SIZE=smoke)', () => {
  it.runIf(RUNNABLE)('runs every benchmark but PostgreSQL, prints a row each with its rates, and leaves bench/results.md alone under BENCH_ONLY', async () => {
    const before = { text: readFileSync(RESULTS, 'utf8'), mtime: statSync(RESULTS).mtimeMs };
    const r = await bench({ BENCH_SIZE: 'smoke', BENCH_ONLY: 'shell,handler,gzip,scale,split' });
    expect(r.code, r.stderr).toBe(0);
    const rows = r.stdout.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| benchmark') && !l.startsWith('| ---'));
    expect(rows.map((l) => l.split(' | ')[0]!.slice(2))).toEqual(['shell tasks', 'handler tasks', 'real workload', 'scale', 'split']);
    for (const row of rows) {
      const rates = [...row.matchAll(/: (\d+)\/s/g)].map((m) => Number(m[1]));
      expect(rates.length, row).toBeGreaterThan(0);
      expect(rates.every((x) => x > 0), row).toBe(true);
    }
    expect(rows[0]).toMatch(/× parallel --joblog, [\d.]+× xargs -P2/);
    expect(rows[1]).toMatch(/[\d.]+× bare fork\/IPC ping-pong/);
    expect(rows[3]).toMatch(/peak RSS \d+ MB \(largest process\); status [\d.]+ s/);
    expect(rows[4]).toMatch(/enqueued in [\d.]+ s/);
    expect(r.stdout).toMatch(/medians of 1 run\(s\) \(BENCH_SIZE=smoke\)/);
    expect({ text: readFileSync(RESULTS, 'utf8'), mtime: statSync(RESULTS).mtimeMs }).toEqual(before);
  }, 180_000);

  it.runIf(RUNNABLE)('fails, naming the benchmark, when a run does not complete (no figure for work not done)', async () => {
    // The store's failpoint SIGKILLs the coordinator after its third commit.
    const r = await bench({ BENCH_SIZE: 'smoke', BENCH_ONLY: 'scale', SPLITDANCE_FAILPOINT: 'write:3' });
    removeKeptWork(r.stderr);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^bench: scale: splitdance run exited SIGKILL, not 0/m);
    expect(r.stdout).not.toMatch(/\| scale \|/);
  }, 60_000);

  it('exits 2 with the install command when GNU parallel is missing, and on unknown settings', async () => {
    const noParallel = await bench({ BENCH_SIZE: 'smoke', PATH: '/nonexistent' });
    expect(noParallel.code).toBe(2);
    expect(noParallel.stderr).toMatch(/GNU parallel is needed for the comparison: apt-get install parallel/);
    const size = await bench({ BENCH_SIZE: 'huge' });
    expect(size.code).toBe(2);
    expect(size.stderr).toMatch(/BENCH_SIZE must be one of full, quick, smoke, not "huge"/);
    const only = await bench({ BENCH_ONLY: 'shell,gzp' });
    expect(only.code).toBe(2);
    expect(only.stderr).toMatch(/BENCH_ONLY names unknown benchmarks \(gzp\)/);
  }, 60_000);
});
