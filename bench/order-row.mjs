// Claim order on a skewed folder (BENCH.md's order row): 39 files whose command sleeps d seconds
// and one that sleeps 50·d, each file's size proportional to its duration, `-j 2`. `--order
// size` claims the big one first; key order claims it last (z-big.dat). Their makespans, end to
// end, beside the LPT lower bound of the same durations on two slots.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNS, SIZES } from './settings.mjs';
import { BIN, benchmark, fail, median, sideBySide, timedRun, work } from './measure.mjs';
import { atMost, times } from './verdict.mjs';

const SMALL = 39;
/** The big file's duration, in small ones. */
const SKEW = 50;
/** Bytes of file per ms of duration: the size order sees the durations. */
const BYTES_PER_MS = 10;
const SLOTS = 2;
const EXEC = 'sleep "$(head -n1 {})"';

/** `order/`: the small files f00.dat … f38.dat and z-big.dat, each its sleep in seconds on the first line, then padding. */
function skewedDir(d) {
  const dir = join(work, 'order');
  mkdirSync(dir, { recursive: true });
  const file = (name, seconds) => {
    const line = `${Number(seconds.toFixed(3))}\n`;
    const pad = Math.max(0, Math.round(seconds * 1000 * BYTES_PER_MS) - line.length - 1);
    writeFileSync(join(dir, name), `${line}${'x'.repeat(pad)}\n`);
  };
  for (let i = 0; i < SMALL; i++) file(`f${String(i).padStart(2, '0')}.dat`, d);
  file('z-big.dat', SKEW * d);
  return dir;
}

/** Seconds from the batch's first attempt start to its last end (`tasks --json`): the makespan without start-up and exit. */
function span() {
  const r = spawnSync(process.execPath, [BIN, 'tasks', '--json'], { cwd: work, encoding: 'utf8' });
  if (r.status !== 0) fail(`splitdance tasks --json exited ${r.status ?? r.signal}: ${r.stderr.trim()}`);
  const tasks = JSON.parse(r.stdout);
  const first = Math.min(...tasks.map((t) => Date.parse(t.startedAt)));
  const last = Math.max(...tasks.map((t) => Date.parse(t.finishedAt)));
  return (last - first) / 1000;
}

export function claimOrder() {
  benchmark('order');
  const d = SIZES.order;
  const n = SMALL + 1;
  const dir = skewedDir(d);
  // LPT's lower bound on two slots: no schedule beats the longest task or an even split.
  const bound = Math.max(SKEW * d, ((SMALL + SKEW) * d) / SLOTS);
  const spans = { size: [], key: [] };
  const sd = (order, extra) => () => {
    const m = timedRun(n, ['run', dir, '--exec', EXEC, '-j', String(SLOTS), '--quiet', ...extra]);
    spans[order].push(span());
    return m;
  };
  const m = sideBySide({ size: sd('size', ['--order', 'size']), key: sd('key', []) }, RUNS);
  const ratio = (x) => x.wall / bound;
  const note = (order) => `makespan ${m[order].wall.toFixed(2)} s, ${times(ratio(m[order]))} LB; first start to last end ${median(spans[order]).toFixed(2)} s`;
  return {
    benchmark: 'order',
    workload: `${SMALL} files × sleep ${d} s and one × ${Number((SKEW * d).toFixed(3))} s (z-big.dat, claimed last in key order), size ∝ duration, -j ${SLOTS}; LB ${bound.toFixed(2)} s`,
    entries: [
      { name: `splitdance -j ${SLOTS} --order size`, rate: n / m.size.wall, note: note('size') },
      { name: `splitdance -j ${SLOTS}, key order`, rate: n / m.key.wall, note: note('key') },
      { name: 'LPT lower bound', rate: n / bound, note: `${bound.toFixed(2)} s` },
    ],
    ratio: `--order size ${times(ratio(m.size))} LB, key order ${times(ratio(m.key))} LB`,
    goals: [atMost('--order size ≤ 1.10× LB', ratio(m.size), 1.1, times(ratio(m.size), 3))],
  };
}
