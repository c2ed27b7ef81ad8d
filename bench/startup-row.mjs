// Start-up: what every command pays before it does anything, against `node -e 0` measured in
// the same run (BENCH.md's start-up row): `--version`, `status` on a small store, and a
// one-task `run --exec true` on a new store. Each is a fresh Node process, interleaved.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNS, SIZES } from './settings.mjs';
import { BIN, benchmark, measure, sideBySide, work } from './measure.mjs';
import { atMost, times } from './verdict.mjs';

export function startup() {
  benchmark('start-up');
  const dir = join(work, 'startup');
  mkdirSync(join(dir, 'src'), { recursive: true });
  writeFileSync(join(dir, 'src', 'a.txt'), 'a\n');
  // A small store for `status`: the same one task, run once.
  measure([process.execPath, BIN, 'run', 'src', '--exec', 'true', '--quiet'], { cwd: dir });
  const fresh = join(dir, 'fresh');
  const node = () => measure([process.execPath, '-e', '0'], { cwd: dir });
  const version = () => measure([process.execPath, BIN, '--version'], { cwd: dir });
  const status = () => measure([process.execPath, BIN, 'status'], { cwd: dir });
  const run = () => {
    rmSync(fresh, { recursive: true, force: true });
    return measure([process.execPath, BIN, 'run', 'src', '--exec', 'true', '--quiet', '--db', join(fresh, 'store.db')], { cwd: dir });
  };
  // One start takes milliseconds: each run repeats every variant (SIZES.startup), interleaved.
  const m = sideBySide({ node, version, status, run }, RUNS * SIZES.startup);
  const ms = (x) => `${(x.wall * 1000).toFixed(0)} ms`;
  const ratio = (x) => x.wall / m.node.wall;
  return {
    benchmark: 'start-up',
    workload: '`--version`; `status` on a one-task store; a one-task `run --exec true` on a new store; each a fresh process',
    entries: [
      { name: 'node -e 0', rate: 1 / m.node.wall, note: ms(m.node) },
      { name: 'splitdance --version', rate: 1 / m.version.wall, note: `${ms(m.version)}, ${times(ratio(m.version))} node` },
      { name: 'splitdance status', rate: 1 / m.status.wall, note: `${ms(m.status)}, ${times(ratio(m.status))} node` },
      { name: 'splitdance run (one task, new store)', rate: 1 / m.run.wall, note: `${ms(m.run)}, ${times(ratio(m.run))} node` },
    ],
    ratio: `${times(ratio(m.version))} / ${times(ratio(m.status))} / ${times(ratio(m.run))} node -e 0`,
    goals: [
      atMost('--version ≤ 1.3× node', ratio(m.version), 1.3, times(ratio(m.version))),
      atMost('status ≤ 1.8× node', ratio(m.status), 1.8, times(ratio(m.status))),
      atMost('one-task run ≤ 2.5× node', ratio(m.run), 2.5, times(ratio(m.run))),
    ],
  };
}
