// The benchmarks where every task is a process (shell `true`, gzip, `sleep 0.01`): splitdance
// side by side with xargs at the same number of slots, and with GNU parallel. They also give
// the machine's rates: how fast xargs and parallel start processes here.
import { cpSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNS, SIZES } from './settings.mjs';
import { ROOT, benchmark, expectTasks, fail, filesDir, measure, sideBySide, splitdance, work } from './measure.mjs';
import { atLeast, atMost, ownCost, speedup, times } from './verdict.mjs';

const rate = (n, m) => n / m.wall;

/**
 * splitdance at -j 1 and -j 2, xargs -n1 at -P1 and -P2 and (given its arguments) GNU
 * parallel -j2 --joblog, all on the same `n` tasks, interleaved. `prepare` runs before every
 * run, `check(tool)` after it; splitdance's store must hold `n` succeeded tasks.
 */
function versusXargs({ n, splitdanceArgs, xargs, parallel, list, prepare = () => {}, check = () => {} }) {
  const timed = (tool, f) => () => {
    prepare();
    const m = f();
    if (tool === 'splitdance') expectTasks(work, n);
    check(tool);
    return m;
  };
  const sd = (j) => timed('splitdance', () => splitdance(splitdanceArgs(j)));
  const xa = (p) => timed('xargs', () => measure(['xargs', `-P${p}`, '-n1', ...xargs], { stdin: list }));
  const par = timed('parallel', () => measure(['parallel', '-j2', '--joblog', join(work, 'joblog'), ...parallel], { stdin: list }));
  return sideBySide({ sd2: sd(2), xargs2: xa(2), ...(parallel && { parallel: par }), sd1: sd(1), xargs1: xa(1) }, RUNS);
}

function entries(n, m) {
  return [
    { name: 'splitdance -j 2', rate: rate(n, m.sd2) },
    ...(m.parallel ? [{ name: 'parallel -j2 --joblog', rate: rate(n, m.parallel) }] : []),
    { name: 'xargs -P2', rate: rate(n, m.xargs2) },
    { name: 'splitdance -j 1', rate: rate(n, m.sd1) },
    { name: 'xargs -P1', rate: rate(n, m.xargs1) },
  ];
}

const ownVersusXargs = (n, m) => [ownCost(m.sd1, m.xargs1, n, 1), ownCost(m.sd2, m.xargs2, n, 2)];

/** How fast this machine starts processes: `true` by xargs -P2 and by parallel -j2 (tasks/s). */
const machineOf = (n, m) => ({ tasks: n, xargs: rate(n, m.xargs2), parallel: rate(n, m.parallel) });

/** The machine's rates alone, for a run that leaves the shell benchmark out. */
export function machineRates() {
  benchmark('machine');
  const n = SIZES.shell;
  filesDir('shell', n);
  const list = join(work, 'shell.list');
  const m = sideBySide({
    xargs2: () => measure(['xargs', '-P2', '-n1', 'true'], { stdin: list }),
    parallel: () => measure(['parallel', '-j2', '--joblog', join(work, 'joblog'), 'true'], { stdin: list }),
  }, RUNS);
  return machineOf(n, m);
}

/** Shell tasks: one spawn of `true` per file. */
export function shellTasks() {
  benchmark('shell tasks');
  const n = SIZES.shell;
  const dir = filesDir('shell', n);
  const m = versusXargs({ n, splitdanceArgs: (j) => ['run', dir, '--exec', 'true', '-j', String(j), '--quiet'], xargs: ['true'], parallel: ['true'], list: join(work, 'shell.list') });
  const vsPar = speedup(m.sd2, m.parallel);
  const vsXargs = speedup(m.sd2, m.xargs2);
  const row = {
    benchmark: 'shell tasks',
    workload: `${n} files, --exec true`,
    entries: entries(n, m),
    ratio: `${times(vsPar)} parallel --joblog, ${times(vsXargs)} xargs -P2`,
    own: ownVersusXargs(n, m),
    ownBase: 'xargs',
    goals: [atLeast('≥ 5× parallel', vsPar, 5, times(vsPar, 3)), atLeast('≥ 1.0× xargs', vsXargs, 1, times(vsXargs, 3))],
  };
  return { row, machine: machineOf(n, m) };
}

/**
 * A real workload: gzip every file of a package tree from node_modules (zod's: some 840
 * files of every size, a pile of files like the ones splitdance is for).
 */
export function gzipTree() {
  benchmark('real workload');
  const tree = join(work, 'tree');
  cpSync(join(ROOT, SIZES.gzipTree), tree, { recursive: true });
  const files = readdirSync(tree, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath ?? e.path, e.name));
  const list = join(work, 'tree.list');
  writeFileSync(list, files.join('\n') + '\n');
  const n = files.length;
  const m = versusXargs({
    n,
    splitdanceArgs: (j) => ['run', tree, '--exec', 'gzip -kf {}', '-j', String(j), '--quiet'],
    xargs: ['gzip', '-kf'],
    parallel: ['gzip', '-kf'],
    list,
    prepare: () => measure(['find', tree, '-name', '*.gz', '-delete']),
    // Each tool must have compressed every file, or its time says nothing.
    check: (tool) => {
      const made = readdirSync(tree, { recursive: true }).filter((f) => String(f).endsWith('.gz')).length;
      if (made !== n) fail(`${tool} left ${made} of ${n} files compressed`);
    },
  });
  const vsPar = speedup(m.sd2, m.parallel);
  const vsXargs = speedup(m.sd2, m.xargs2);
  return {
    benchmark: 'real workload',
    workload: `gzip ${n} files of ${SIZES.gzipTree}`,
    entries: entries(n, m),
    ratio: `${times(vsPar)} parallel --joblog, ${times(vsXargs)} xargs -P2`,
    own: ownVersusXargs(n, m),
    ownBase: 'xargs',
    goals: [atLeast('≥ 1.0× xargs', vsXargs, 1, times(vsXargs, 3)), atLeast('≥ 1.5× parallel', vsPar, 1.5, times(vsPar, 3))],
  };
}

/** Latency: tasks that each sleep 10 ms, so that what splitdance adds per task shows. */
export function latency() {
  benchmark('latency');
  const n = SIZES.latency;
  const dir = filesDir('latency', n);
  const list = join(work, 'sleeps.list');
  writeFileSync(list, '0.01\n'.repeat(n));
  const m = versusXargs({ n, splitdanceArgs: (j) => ['run', dir, '--exec', 'sleep 0.01', '-j', String(j), '--quiet'], xargs: ['sleep'], list });
  const vsXargs = speedup(m.sd2, m.xargs2);
  const own = ownVersusXargs(n, m);
  const lostMs = own[1].wall / 1000;
  return {
    benchmark: 'latency',
    workload: `${n} × sleep 0.01 (one file each)`,
    entries: entries(n, m),
    ratio: `${times(vsXargs)} xargs -P2; ${lostMs.toFixed(2)} ms lost per task`,
    own,
    ownBase: 'xargs',
    goals: [atLeast('≥ 0.97× xargs', vsXargs, 0.97, times(vsXargs, 3)), atMost('≤ 0.3 ms lost per task', lostMs, 0.3, `${lostMs.toFixed(3)} ms`)],
  };
}
