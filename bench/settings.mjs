// What this `npm run bench` measures and how big: read from the environment once, refused
// (exit 2) when they name no size or no benchmark.
import { spawnSync } from 'node:child_process';

/**
 * BENCH_SIZE: `full` (the default: the sizes of BENCH.md's goals, medians of 3 runs),
 * `quick` (smaller, one run; BENCH_QUICK=1 is the same) or `smoke` (tiny, one run: the test
 * suite runs it to keep this harness working; its figures mean nothing).
 */
export const SIZE = process.env.BENCH_SIZE ?? (process.env.BENCH_QUICK === '1' ? 'quick' : 'full');
const PRESETS = {
  full: { runs: 3, startup: 10, items: 10_000, shell: 1000, latency: 600, handler: 40_000, million: 1_000_000, split: 100_000, pg: 10_000, gzipTree: 'node_modules/zod', groupItems: 20_000, groupHandler: 40_000, order: 0.2, adaptive: 900, tenMillion: 10_000_000, tenMillionAttempts: 10_000 },
  quick: { runs: 1, startup: 5, items: 2000, shell: 300, latency: 300, handler: 10_000, million: 100_000, split: 20_000, pg: 2000, gzipTree: 'node_modules/zod', groupItems: 5000, groupHandler: 10_000, order: 0.2, adaptive: 700, tenMillion: 1_000_000, tenMillionAttempts: 10_000 },
  smoke: { runs: 1, startup: 1, items: 30, shell: 20, latency: 20, handler: 300, million: 2000, split: 300, pg: 200, gzipTree: 'node_modules/commander', groupItems: 200, groupHandler: 300, order: 0.01, adaptive: 40, tenMillion: 2000, tenMillionAttempts: 200 },
};
export const SIZES = PRESETS[SIZE];
if (!SIZES) {
  console.error(`BENCH_SIZE must be one of ${Object.keys(PRESETS).join(', ')}, not "${SIZE}"`);
  process.exit(2);
}
export const RUNS = SIZES.runs;

/** BENCH_ONLY=shell,gzip runs only those benchmarks and writes no results file. */
const NAMES = ['shell', 'startup', 'handler', 'gzip', 'latency', 'scale', 'split', 'pg', 'watch', 'fleet', 'items', 'groups', 'order', 'adaptive', 'ten'];
export const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : null;
const unknown = [...(ONLY ?? [])].filter((n) => !NAMES.includes(n));
if (unknown.length) {
  console.error(`BENCH_ONLY names unknown benchmarks (${unknown.join(', ')}); the benchmarks are ${NAMES.join(', ')}`);
  process.exit(2);
}
export const want = (name) => !ONLY || ONLY.has(name);

if (spawnSync('parallel', ['--version'], { stdio: 'ignore' }).status !== 0) {
  console.error('GNU parallel is needed for the comparison: apt-get install parallel');
  process.exit(2);
}
