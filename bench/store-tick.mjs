#!/usr/bin/env node
// The coordinator's tick on the SQLite store alone: each tick settles the previous tick's
// attempts and claims for as many free slots, in one settleAndClaim, on a real store file
// (WAL, synchronous NORMAL, as `run` opens it). Prints µs per tick and per task (wall and
// CPU) for ticks of 1, 2, 8 and 32 tasks; medians of interleaved runs.
//
//   npm run build && node bench/store-tick.mjs [--tasks 20000] [--outcome SUCCESS|FAILED] [--runs 5]
//                                              [--against <another build's dist folder>]
//
// --against measures another build (say, a copy of dist/ made before a change) in the same
// runs, alternating with this one, so the two are compared on the same machine load.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: opts } = parseArgs({
  options: {
    tasks: { type: 'string', default: '20000' },
    outcome: { type: 'string', default: 'SUCCESS' },
    runs: { type: 'string', default: '5' },
    against: { type: 'string' },
  },
});
const TASKS = Number(opts.tasks);
const OUTCOME = opts.outcome;
const RUNS = Number(opts.runs);
const SIZES = [1, 2, 8, 32];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const load = async (dist) => (await import(pathToFileURL(join(dist, 'store/sqlite/sqlite-store.js')).href)).SqliteStore;
const builds = [['this build', await load(join(dirname(fileURLToPath(import.meta.url)), '..', 'dist'))]];
if (opts.against) builds.push([`--against ${opts.against}`, await load(resolve(opts.against))]);

const spec = (i) => {
  const key = `f${String(i).padStart(7, '0')}`;
  return { key, payload: { version: 1, path: `/data/src/${key}`, rel: key }, fingerprint: '10:1700000000000' };
};

/** One run: every task of a fresh batch through ticks of `n` tasks. */
async function measure(SqliteStore, n) {
  const dir = mkdtempSync(join(tmpdir(), 'sd-tick-'));
  const store = SqliteStore.open(join(dir, 'splitdance.db'), { create: true });
  try {
    const ok = OUTCOME === 'SUCCESS';
    const job = { version: 1, handler: { exec: 'true' }, retries: 0 };
    const { batch } = await store.enqueue({ name: 'b', source: '/data', job, maxAttempts: 1 }, Array.from({ length: TASKS }, (_, i) => spec(i)));
    const slots = Array.from({ length: n }, (_, i) => ({ workerId: `w${i}`, pid: 1000 + i }));
    let held = [];
    let ticks = 0;
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    for (;;) {
      const now = Date.now();
      const settlements = held.map((t) => ({
        ...{ token: t.token, taskId: t.id, outcome: OUTCOME, endedAt: now, durationMs: 1, exitCode: ok ? 0 : 1, signal: null },
        ...{ error: ok ? null : 'exit code 1', outputTail: null, logPath: null, result: null, retryAt: null },
      }));
      const req = { batchId: batch.id, owner: 'bench-owner', host: 'bench', now, leaseMs: 30_000, slots, jobVersion: batch.jobVersion };
      const { claimed } = await store.settleAndClaim(settlements, req);
      ticks++;
      held = claimed;
      if (claimed.length === 0) break;
    }
    const wall = Number(process.hrtime.bigint() - t0) / 1e3;
    const cpu = process.cpuUsage(c0);
    const c = await store.counts(batch.id);
    if ((ok ? c.succeeded : c.failed) !== TASKS) throw new Error(`only ${ok ? c.succeeded : c.failed} of ${TASKS} tasks ended ${OUTCOME}`);
    return { tick: wall / ticks, task: wall / TASKS, cpu: (cpu.user + cpu.system) / TASKS };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const results = new Map(builds.map(([name]) => [name, new Map(SIZES.map((n) => [n, []]))]));
for (let r = 0; r < RUNS; r++) {
  for (const n of SIZES) for (const [name, SqliteStore] of builds) results.get(name).get(n).push(await measure(SqliteStore, n));
}
console.log(`${TASKS} tasks per run, outcome ${OUTCOME}, medians of ${RUNS} interleaved runs`);
console.log('| build | tasks per tick | µs per tick | µs per task (wall) | µs per task (CPU) |');
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const n of SIZES) {
  for (const [name] of builds) {
    const runs = results.get(name).get(n);
    const m = (k) => median(runs.map((x) => x[k])).toFixed(1);
    console.log(`| ${name} | ${n} | ${m('tick')} | ${m('task')} | ${m('cpu')} |`);
  }
}
