// Many items per command or per handler call (`-n 64`, a handler's `batch` export), every item
// still its own task row: side by side with xargs and GNU parallel on the same list, and with
// the bare fork/IPC ping-pong the handler benchmark measures against.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNS, SIZES } from './settings.mjs';
import { BIN, ROOT, benchmark, expectTasks, itemsList, measure, sideBySide, timedRun, work } from './measure.mjs';
import { atLeast, ownCost, speedup, times } from './verdict.mjs';

const NOOP = join(ROOT, 'fixtures/handlers/ok.mjs');
const NOOP_BATCH = join(ROOT, 'fixtures/handlers/noop-batch.mjs');
/** Items per command, as `-n` gives it and xargs is given it too. */
const GROUP = 64;
const rate = (n, m) => n / m.wall;
/** `n` distinct items, one a line. */
const list = (name, n) => itemsList(name, n, (i) => `item-${i}`);

/**
 * 20,000 `true` items, `-j 2 -n 64`: one command per 64 items, each item its own task (all
 * SUCCESS), vs xargs -P2 -n1, parallel -j2 --joblog (one item per command) and xargs -P2 -n64
 * (as many commands as splitdance, no state at all) on the same list, interleaved.
 */
export function manyItemsPerCall() {
  benchmark('many items per call');
  const n = SIZES.groupItems;
  const path = list('group-items.list', n);
  const m = sideBySide({
    sd: () => {
      rmSync(join(work, '.splitdance'), { recursive: true, force: true });
      const r = measure([process.execPath, BIN, 'run', '--items', path, '-j', '2', '-n', String(GROUP), '--exec', 'true', '--quiet']);
      expectTasks(work, n);
      return r;
    },
    xargs1: () => measure(['xargs', '-P2', '-n1', 'true'], { stdin: path }),
    parallel: () => measure(['parallel', '-j2', '--joblog', join(work, 'joblog'), 'true'], { stdin: path }),
    xargsGroup: () => measure(['xargs', '-P2', `-n${GROUP}`, 'true'], { stdin: path }),
  }, RUNS);
  const vsXargs = speedup(m.sd, m.xargs1);
  const vsPar = speedup(m.sd, m.parallel);
  const vsGroup = speedup(m.sd, m.xargsGroup);
  return {
    benchmark: 'many items per call',
    workload: `${n} items, --exec true -n ${GROUP}, a task row each`,
    entries: [
      { name: `splitdance -j 2 -n ${GROUP}`, rate: rate(n, m.sd), note: `CPU ${Math.round((m.sd.cpu / n) * 1e6)} µs per item` },
      { name: 'xargs -P2 -n1', rate: rate(n, m.xargs1) },
      { name: 'parallel -j2 --joblog', rate: rate(n, m.parallel) },
      { name: `xargs -P2 -n${GROUP}`, rate: rate(n, m.xargsGroup) },
    ],
    ratio: `${times(vsXargs)} xargs -P2 -n1, ${times(vsPar)} parallel --joblog, ${times(vsGroup)} xargs -P2 -n${GROUP}`,
    // Beyond xargs -n64, which starts as many commands: splitdance's own cost per item.
    own: [{ ...ownCost(m.sd, m.xargsGroup, n, 2), base: `xargs -P2 -n${GROUP}` }],
    goals: [atLeast('≥ 2× xargs -n1', vsXargs, 2, times(vsXargs, 3)), atLeast('≥ 10× parallel', vsPar, 10, times(vsPar, 3))],
  };
}

/**
 * 40,000 no-op tasks by a handler with a `batch` export (up to 64 tasks per call), `-j 2`, vs the
 * bare fork/IPC ping-pong (one message in flight per worker) and the one-at-a-time no-op handler.
 */
export function groupedHandler() {
  benchmark('grouped handler');
  const n = SIZES.groupHandler;
  const file = join(work, 'grouped-handler.txt');
  writeFileSync(file, 'x\n'.repeat(n));
  const sd = (handler) => () => timedRun(n, ['run', file, '--lines', '1', '--handler', handler, '-j', '2', '--quiet']);
  const m = sideBySide({
    batch: sd(NOOP_BATCH),
    ping: () => measure([process.execPath, join(ROOT, 'bench/ping-pong.mjs'), String(n), '2']),
    single: sd(NOOP),
  }, RUNS);
  const vsPing = speedup(m.batch, m.ping);
  const vsSingle = speedup(m.batch, m.single);
  return {
    benchmark: 'grouped handler',
    workload: `${n} no-op JS tasks, a batch export, an attempt row each`,
    entries: [
      { name: 'splitdance -j 2, batch export', rate: rate(n, m.batch), note: `CPU ${Math.round((m.batch.cpu / n) * 1e6)} µs per task` },
      { name: 'bare fork/IPC ping-pong, 2 workers', rate: rate(n, m.ping) },
      { name: 'splitdance -j 2, one task per call', rate: rate(n, m.single), note: `CPU ${Math.round((m.single.cpu / n) * 1e6)} µs per task` },
    ],
    ratio: `${times(vsPing)} bare fork/IPC ping-pong, ${times(vsSingle)} one task per call`,
    own: [{ ...ownCost(m.batch, m.ping, n, 2), base: 'ping-pong, 2 workers' }],
    goals: [atLeast('≥ 1.25× ping-pong', vsPing, 1.25, times(vsPing, 3))],
  };
}
