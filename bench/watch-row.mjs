// Watch: a large batch of no-op handler tasks run with and without a `watch --interval 1s`
// process reading the same store. Reading must not slow the run it watches (BENCH.md: a
// watched 1M-task run within 5% of an unwatched one). BENCH_WATCH_N sets the size (default:
// the scale benchmark's million; 200000 is a fair smoke of the goal).
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNS, SIZES } from './settings.mjs';
import { BIN, ROOT, benchmark, fail, median, timedRun, work } from './measure.mjs';
import { atMost, times } from './verdict.mjs';

const NOOP = join(ROOT, 'fixtures/handlers/ok.mjs');
const BATCH = 'bench-watch';

export async function watchedRun() {
  benchmark('watch');
  const n = Number(process.env.BENCH_WATCH_N ?? SIZES.million);
  if (!Number.isInteger(n) || n <= 0) fail(`BENCH_WATCH_N must be a positive whole number, not "${process.env.BENCH_WATCH_N}"`);
  const file = join(work, 'watched.txt');
  writeFileSync(file, 'x\n'.repeat(n));
  const run = () => timedRun(n, ['run', file, '--batch', BATCH, '--lines', '1', '--handler', NOOP, '-j', '2', '--quiet']);
  const plain = [];
  const watched = [];
  for (let r = 0; r < RUNS; r++) {
    plain.push(run().wall);
    watched.push((await underWatch(run)).wall);
  }
  const base = median(plain);
  const seen = median(watched);
  const ratio = seen / base;
  return {
    benchmark: 'watch',
    workload: `${n} no-op JS tasks (--lines 1), -j 2, with and without \`watch --interval 1s\` reading the store`,
    entries: [
      { name: 'unwatched', rate: n / base },
      { name: 'watched', rate: n / seen },
    ],
    ratio: `watched run took ${times(ratio, 3)} the unwatched one`,
    goals: [atMost('watched ≤ 1.05× unwatched', ratio, 1.05, times(ratio, 3))],
  };
}

/**
 * `run` measured while a watcher follows its batch: the watcher is started first (on a store
 * that does not exist yet, so it waits for the batch), and must end by itself with exit 0,
 * having printed a line per interval.
 */
async function underWatch(run) {
  rmSync(join(work, '.splitdance'), { recursive: true, force: true });
  const out = join(work, 'watch.out');
  const fd = openSync(out, 'w');
  const watcher = spawn(process.execPath, [BIN, 'watch', '--batch', BATCH, '--interval', '1s'], { cwd: work, stdio: ['ignore', fd, 'ignore'] });
  closeSync(fd);
  const ended = new Promise((done) => watcher.on('close', (code) => done(code)));
  const m = run(); // synchronous: the watcher runs meanwhile as a process of its own
  const code = await Promise.race([ended, new Promise((done) => setTimeout(() => done('timeout'), 30_000))]);
  if (code !== 0) {
    watcher.kill('SIGKILL');
    fail(`watch exited ${code}, not 0, after the run`);
  }
  const lines = readFileSync(out, 'utf8').trim().split('\n');
  if (!/ done, \d+ succeeded, 0 failed.*, done$/.test(lines.at(-1) ?? '')) fail(`watch did not follow the run to its end: ${lines.at(-1)}`);
  return m;
}
