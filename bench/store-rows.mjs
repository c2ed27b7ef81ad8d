// The benchmarks of the store at scale: a million tasks, a big directory, PostgreSQL.
// No baseline to compare with, so no own cost per task: each is judged on its bound.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNS, SIZES } from './settings.mjs';
import { BIN, ROOT, benchmark, expectTasks, fail, filesDir, median, splitdance, status, timedRun, work } from './measure.mjs';
import { atLeast, atMost, below } from './verdict.mjs';

const NOOP = join(ROOT, 'fixtures/handlers/ok.mjs');

/** Scale: a million one-line tasks; peak RSS of every process; status latency. */
export async function scale() {
  benchmark('scale');
  const n = SIZES.million;
  const file = join(work, 'million.txt');
  writeFileSync(file, 'x\n'.repeat(n));
  rmSync(join(work, '.splitdance'), { recursive: true, force: true });
  const { seconds, peakRss, code } = await withPeakRss([BIN, 'run', file, '--lines', '1', '--handler', NOOP, '-j', '2', '--quiet'], work);
  if (code !== 0) fail(`splitdance run exited ${code}, not 0`);
  expectTasks(work, n); // "completes": every task succeeded
  const statusSecs = median(Array.from({ length: 5 }, () => {
    const t = process.hrtime.bigint();
    status(work);
    return Number(process.hrtime.bigint() - t) / 1e9;
  }));
  const mb = peakRss / 1048576;
  return {
    benchmark: 'scale',
    workload: `${n} tasks (--lines 1), no-op handler, -j 2`,
    entries: [{ name: 'splitdance', rate: n / seconds, note: `peak RSS ${mb.toFixed(0)} MB (largest process); status ${statusSecs.toFixed(2)} s` }],
    goals: [
      { text: 'completes', met: true, shown: `${n} succeeded` },
      atMost('every process ≤ 200 MB', mb, 200, `${mb.toFixed(0)} MB`),
      below('status < 0.5 s', statusSecs, 0.5, `${statusSecs.toFixed(2)} s`),
    ],
  };
}

/** Split: enqueue a directory of many files (time to the start event). */
export function split() {
  benchmark('split');
  const n = SIZES.split;
  const dir = filesDir('split', n);
  const walk = median(Array.from({ length: RUNS }, () => splitdance(['run', dir, '--exec', 'true', '--dry-run']).wall));
  // Stopped by --max-runtime right after the enqueue: exit 3 (incomplete), every file a task.
  const full = median(Array.from({ length: RUNS }, () => {
    const { wall } = splitdance(['run', dir, '--exec', 'true', '--max-runtime', '1ms', '-j', '1'], work, 3);
    expectTasks(work, n, { enqueuedOnly: true });
    return wall;
  }));
  return {
    benchmark: 'split',
    workload: `${n} files in a directory`,
    entries: [
      { name: 'splitdance (walk only, --dry-run)', rate: n / walk },
      { name: 'splitdance (walk + enqueue, run stopped at once)', rate: n / full, note: `enqueued in ${full.toFixed(2)} s` },
    ],
    goals: [atMost('≤ 5 s', full, 5, `${full.toFixed(2)} s`)],
  };
}

/** Shared store: the handler benchmark on PostgreSQL with 1, 2 and 4 worker processes. */
export function sharedStore(url) {
  benchmark('shared store');
  const n = SIZES.pg;
  const file = join(work, 'pg.txt');
  writeFileSync(file, 'x\n'.repeat(n));
  const entries = [];
  for (const j of [1, 2, 4]) {
    const db = `${url}${url.includes('?') ? '&' : '?'}schema=bench_${process.pid}_${j}`;
    const dbArgs = ['--db', db, '--batch', `pg-${j}`];
    const { wall } = timedRun(n, ['run', file, ...dbArgs, '--lines', '1', '--handler', NOOP, '-j', String(j), '--quiet'], work, dbArgs);
    entries.push({ name: `-j ${j}`, rate: n / wall });
  }
  const j2 = entries[1].rate;
  return {
    benchmark: 'shared store',
    workload: `${n} no-op tasks on PostgreSQL`,
    entries,
    goals: [atLeast('≥ 5,000/s at -j 2', j2, 5000, `${j2.toFixed(0)}/s`)],
  };
}

/**
 * Shared store, scale-out: one `run` and extra `worker --batch B` processes on one batch, all
 * started together (the workers wait for the batch the run creates). Sleep tasks show whether
 * 16 slots stay busy; no-op tasks whether workers add throughput to the store's own rate.
 */
export async function sharedStoreScale(url) {
  benchmark('shared store, scale-out');
  const sleeps = SIZES.pg >= 10_000 ? 1600 : Math.max(64, Math.round(SIZES.pg / 6));
  const sleepFile = join(work, 'pg-sleep.txt');
  writeFileSync(sleepFile, 'x\n'.repeat(sleeps));
  const slept = await together(url, 'sleep', sleepFile, sleeps, ['--exec', 'sleep 0.05'], 4, 3, 4);
  const ideal = 16 / 0.05;
  const n = SIZES.pg;
  const file = join(work, 'pg.txt');
  writeFileSync(file, 'x\n'.repeat(n));
  const noop = [];
  for (const extra of [0, 1, 3]) noop.push(await together(url, `noop${extra}`, file, n, ['--handler', NOOP], 2, extra, 2));
  return {
    benchmark: 'shared store, scale-out',
    workload: `${sleeps} × sleep 0.05 on 16 slots (run -j 4 + 3 × worker -j 4); ${n} no-op tasks, run -j 2 + 0, 1, 3 × worker -j 2`,
    entries: [
      { name: '16 slots, sleep 0.05', rate: slept, note: `${((slept / ideal) * 100).toFixed(0)}% of the ideal ${ideal}/s` },
      ...noop.map((rate, i) => ({ name: `no-op, run + ${[0, 1, 3][i]} workers`, rate })),
    ],
    goals: [
      atLeast('≥ 80% of the ideal 320/s with 16 slots', slept, 0.8 * ideal, `${slept.toFixed(0)}/s`),
      atLeast('no-op rate grows with workers (3 extra ≥ none)', noop[2], noop[0], `${noop.map((r) => r.toFixed(0)).join(' → ')}/s`),
    ],
  };
}

/** Tasks per second of one `run -j runJ` plus `extra` × `worker -j workerJ` on a fresh schema; checks every task succeeded. */
async function together(url, tag, file, n, how, runJ, extra, workerJ) {
  const db = `${url}${url.includes('?') ? '&' : '?'}schema=bench_${process.pid}_${tag}`;
  const dbArgs = ['--db', db, '--batch', 'B'];
  const t0 = process.hrtime.bigint();
  const procs = [[BIN, 'run', file, ...dbArgs, '--lines', '1', ...how, '-j', String(runJ), '--quiet']];
  for (let i = 0; i < extra; i++) procs.push([BIN, 'worker', ...dbArgs, '-j', String(workerJ), '--quiet']);
  const codes = await Promise.all(procs.map((args) => new Promise((done) => spawn(process.execPath, args, { cwd: work, stdio: ['ignore', 'ignore', 'inherit'] }).on('exit', (code) => done(code)))));
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  if (codes.some((c) => c !== 0)) fail(`${tag}: exit codes ${codes.join(', ')}, not all 0`);
  expectTasks(work, n, { dbArgs });
  return n / wall;
}

/** Runs a command and samples the RSS of it and all its descendants; returns the largest. */
export function withPeakRss(args, cwd, stdin = null) {
  return new Promise((resolve) => {
    const input = stdin ? openSync(stdin, 'r') : 'ignore';
    const t0 = process.hrtime.bigint();
    const child = spawn(process.execPath, args, { cwd, stdio: [input, 'ignore', 'ignore'] });
    if (stdin) closeSync(input);
    let peak = 0;
    const sample = () => {
      for (const pid of [child.pid, ...descendants(child.pid)]) {
        try {
          const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
          if (m) peak = Math.max(peak, Number(m[1]) * 1024);
        } catch {
          // the process ended between the listing and this read
        }
      }
    };
    const timer = setInterval(sample, 200);
    child.on('exit', (code, signal) => {
      clearInterval(timer);
      resolve({ seconds: Number(process.hrtime.bigint() - t0) / 1e9, peakRss: peak, code: code ?? signal });
    });
  });
}

function descendants(pid) {
  try {
    const kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    return kids.flatMap((k) => [k, ...descendants(k)]);
  } catch {
    return [];
  }
}
