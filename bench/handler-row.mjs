// No-op handler tasks (full durable state, an attempt row each) side by side with a bare
// fork/IPC ping-pong, one message in flight per worker, at 1 and 2 workers.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNS, SIZES } from './settings.mjs';
import { ROOT, benchmark, measure, sideBySide, timedRun, work } from './measure.mjs';
import { atLeast, ownCost, speedup, times } from './verdict.mjs';

const NOOP = join(ROOT, 'fixtures/handlers/ok.mjs');

export function handlerTasks() {
  benchmark('handler tasks');
  const n = SIZES.handler;
  const file = join(work, 'handler.txt');
  writeFileSync(file, 'x\n'.repeat(n));
  const sd = (j) => () => timedRun(n, ['run', file, '--lines', '1', '--handler', NOOP, '-j', String(j), '--quiet']);
  // Measured like splitdance: a Node process of its own, start-up included.
  const ping = (w) => () => measure([process.execPath, join(ROOT, 'bench/ping-pong.mjs'), String(n), String(w)]);
  const m = sideBySide({ sd2: sd(2), ping2: ping(2), sd1: sd(1), ping1: ping(1) }, RUNS);
  const vsPing = speedup(m.sd2, m.ping2);
  const rate = (x) => n / x.wall;
  return {
    benchmark: 'handler tasks',
    workload: `${n} no-op JS tasks, an attempt row each`,
    entries: [
      { name: 'splitdance -j 2', rate: rate(m.sd2) },
      { name: 'bare fork/IPC ping-pong, 2 workers', rate: rate(m.ping2) },
      { name: 'splitdance -j 1', rate: rate(m.sd1) },
      { name: 'ping-pong, 1 worker', rate: rate(m.ping1) },
    ],
    ratio: `${times(vsPing)} bare fork/IPC ping-pong`,
    own: [ownCost(m.sd1, m.ping1, n, 1), ownCost(m.sd2, m.ping2, n, 2)],
    ownBase: 'ping-pong',
    goals: [atLeast('≥ 1.25× ping-pong', vsPing, 1.25, times(vsPing, 3))],
  };
}
