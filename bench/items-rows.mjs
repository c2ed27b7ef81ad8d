// Items from stdin: splitdance reading a list (`… | splitdance run -`) side by side with xargs
// and GNU parallel reading the same list, and a million items enqueued from stdin.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { RUNS, SIZES } from './settings.mjs';
import { BIN, ROOT, benchmark, expectTasks, fail, itemsList, measure, sideBySide, work } from './measure.mjs';
import { withPeakRss } from './store-rows.mjs';
import { atLeast, atMost, ownCost, speedup, times } from './verdict.mjs';

const NOOP = join(ROOT, 'fixtures/handlers/ok.mjs');
const rate = (n, m) => n / m.wall;

/** `n` distinct items, one a line, like the URLs or ids people feed to xargs. */
const list = (name, n) => itemsList(name, n, (i) => `https://example.com/item/${i}`);

/** `splitdance run - --exec true` on a fresh store, the list on stdin; its `n` tasks must have succeeded. */
function fromStdin(path, n, j) {
  return () => {
    rmSync(join(work, '.splitdance'), { recursive: true, force: true });
    const m = measure([process.execPath, BIN, 'run', '-', '--exec', 'true {}', '-j', String(j), '--quiet'], { stdin: path });
    expectTasks(work, n);
    return m;
  };
}

/** 10,000 items from stdin, `true ITEM` each, vs xargs -P2 -n1 and parallel -j2 --joblog on the same list. */
export function itemsFromStdin() {
  benchmark('items');
  const n = SIZES.items;
  const path = list('items.list', n);
  const m = sideBySide({
    sd2: fromStdin(path, n, 2),
    xargs2: () => measure(['xargs', '-P2', '-n1', 'true'], { stdin: path }),
    parallel: () => measure(['parallel', '-j2', '--joblog', join(work, 'joblog'), 'true'], { stdin: path }),
    sd1: fromStdin(path, n, 1),
    xargs1: () => measure(['xargs', '-P1', '-n1', 'true'], { stdin: path }),
  }, RUNS);
  const vsPar = speedup(m.sd2, m.parallel);
  const vsXargs = speedup(m.sd2, m.xargs2);
  return {
    benchmark: 'items',
    workload: `${n} items from stdin, --exec 'true {}'`,
    entries: [
      { name: 'splitdance -j 2', rate: rate(n, m.sd2) },
      { name: 'parallel -j2 --joblog', rate: rate(n, m.parallel) },
      { name: 'xargs -P2', rate: rate(n, m.xargs2) },
      { name: 'splitdance -j 1', rate: rate(n, m.sd1) },
      { name: 'xargs -P1', rate: rate(n, m.xargs1) },
    ],
    ratio: `${times(vsPar)} parallel --joblog, ${times(vsXargs)} xargs -P2`,
    own: [ownCost(m.sd1, m.xargs1, n, 1), ownCost(m.sd2, m.xargs2, n, 2)],
    ownBase: 'xargs',
    goals: [atLeast('≥ 1.0× xargs', vsXargs, 1, times(vsXargs, 3)), atLeast('≥ 5× parallel', vsPar, 5, times(vsPar, 3))],
  };
}

/** A million items from stdin, enqueued (the run stopped right after by --max-runtime): rate and peak RSS. */
export async function millionItems() {
  benchmark('items enqueue');
  const n = SIZES.million;
  const path = list('million.list', n);
  rmSync(join(work, '.splitdance'), { recursive: true, force: true });
  const { seconds, peakRss, code } = await withPeakRss([BIN, 'run', '-', '--handler', NOOP, '--max-runtime', '1ms', '-j', '1', '--quiet'], work, path);
  if (code !== 3) fail(`splitdance run - exited ${code}, not 3 (stopped by --max-runtime once enqueued)`);
  expectTasks(work, n, { enqueuedOnly: true });
  const mb = peakRss / 1048576;
  return {
    benchmark: 'items enqueue',
    workload: `${n} items from stdin, enqueued (run stopped at once)`,
    entries: [{ name: 'splitdance run -', rate: n / seconds, note: `peak RSS ${mb.toFixed(0)} MB (largest process); enqueued in ${seconds.toFixed(1)} s` }],
    goals: [atMost('flat memory: every process ≤ 200 MB', mb, 200, `${mb.toFixed(0)} MB`)],
  };
}
