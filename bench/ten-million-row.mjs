// Ten million items (BENCH.md "ten million"): a generated list enqueued from a file with a no-op
// handler, then what a person does with a batch that big: `status`, `results --jsonl`, and the
// log files its attempts leave. The full size is 10,000,000 items; quick 1,000,000.
import { readdirSync, rmSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { SIZES } from './settings.mjs';
import { BIN, ROOT, benchmark, expectTasks, fail, itemsList, median, status, work } from './measure.mjs';
import { withPeakRss } from './store-rows.mjs';
import { atLeast, atMost } from './verdict.mjs';

const NOOP = join(ROOT, 'fixtures/handlers/ok.mjs');

/** Regular files under `dir`, at any depth. */
function filesUnder(dir) {
  let n = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) n += filesUnder(join(dir, entry.name));
    else if (entry.isFile()) n++;
  }
  return n;
}

/** Seconds `splitdance ARGS` takes, its stdout to /dev/null; it must exit `code`. */
function timed(args, code = 0) {
  const t = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: work, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', maxBuffer: 1 << 26 });
  const seconds = Number(process.hrtime.bigint() - t) / 1e9;
  if (r.status !== code) fail(`splitdance ${args.join(' ')} exited ${r.status ?? r.signal}, not ${code}: ${r.stderr.trim()}`);
  return seconds;
}

export async function tenMillion() {
  benchmark('ten million');
  const n = SIZES.tenMillion;
  const path = itemsList('ten-million.list', n, (i) => `item-${i}`);
  rmSync(join(work, '.splitdance'), { recursive: true, force: true });
  // Enqueued from the file, the run stopped right after by --max-runtime (exit 3).
  const { seconds, peakRss, code } = await withPeakRss([BIN, 'run', '--items', path, '--handler', NOOP, '--max-runtime', '1ms', '-j', '1', '--quiet', '--batch', 'ten'], work);
  if (code !== 3) fail(`splitdance run --items exited ${code}, not 3 (stopped by --max-runtime once enqueued)`);
  expectTasks(work, n, { enqueuedOnly: true });
  const statusSecs = median(Array.from({ length: 5 }, () => {
    const t = process.hrtime.bigint();
    status(work);
    return Number(process.hrtime.bigint() - t) / 1e9;
  }));
  // What Node's own start costs in the same environment, beside it: NODE_EXTRA_CA_CERTS (set on
  // some machines for a proxy) makes every node process read a CA bundle as it starts, about
  // 40 ms on the project's machine, which no store or code of ours can save.
  const nodeMs = startMs([]);
  const caCerts = process.env.NODE_EXTRA_CA_CERTS !== undefined;
  const bare = caCerts ? { status: startMs([BIN, 'status', '--json'], true), node: startMs([], true) } : null;
  const resultsSecs = timed(['results', '--jsonl', '--batch', 'ten']);
  rmSync(path);
  // The log files that attempts leave: a batch of its own, every attempt run.
  const attempts = SIZES.tenMillionAttempts;
  const few = itemsList('attempts.list', attempts, (i) => `attempt-${i}`);
  const logs = join(work, '.splitdance', 'logs');
  const before = statSyncSafe(logs) ? filesUnder(logs) : 0;
  timed(['run', '--items', few, '--exec', 'echo {}', '-j', '2', '--quiet', '--batch', 'attempts']);
  const perTenThousand = ((filesUnder(logs) - before) / attempts) * 10_000;
  const mb = peakRss / 1048576;
  const enqueueRate = n / seconds;
  const rows = n / resultsSecs;
  return {
    benchmark: 'ten million',
    workload: `${n} items from a file, no-op handler (enqueued, then status and results); ${attempts} attempts of echo for their logs`,
    entries: [
      {
        name: 'splitdance run --items',
        rate: enqueueRate,
        note:
          `peak RSS ${mb.toFixed(0)} MB (largest process); status ${(statusSecs * 1000).toFixed(0)} ms (node -e 0: ${nodeMs.toFixed(0)} ms` +
          `${bare ? `; without NODE_EXTRA_CA_CERTS: status ${bare.status.toFixed(0)} ms, node -e 0 ${bare.node.toFixed(0)} ms` : ''}); ` +
          `results --jsonl ${rows.toFixed(0)} rows/s; ${perTenThousand.toFixed(0)} log files per 10,000 attempts`,
      },
    ],
    goals: [
      atLeast('enqueue ≥ 200k items/s', enqueueRate, 200_000, `${(enqueueRate / 1000).toFixed(0)}k/s`),
      atMost('every process ≤ 200 MB', mb, 200, `${mb.toFixed(0)} MB`),
      atMost('status ≤ 100 ms', statusSecs * 1000, 100, `${(statusSecs * 1000).toFixed(0)} ms`),
      atMost('≤ 1 log file per 10,000 attempts', perTenThousand, 1, `${perTenThousand.toFixed(0)}`),
      atLeast('results --jsonl ≥ 500k rows/s', rows, 500_000, `${(rows / 1000).toFixed(0)}k/s`),
    ],
  };
}

/** Milliseconds `node ARGS` takes to start and exit in the batch's folder, median of 5; `bare`: without NODE_EXTRA_CA_CERTS. */
function startMs(args, bare = false) {
  const env = { ...process.env };
  if (bare) delete env.NODE_EXTRA_CA_CERTS;
  return median(Array.from({ length: 5 }, () => {
    const t = process.hrtime.bigint();
    const r = spawnSync(process.execPath, args.length ? args : ['-e', '0'], { cwd: work, env, stdio: 'ignore' });
    if (![0, 1, 3].includes(r.status)) fail(`node ${args.join(' ')} exited ${r.status ?? r.signal}`);
    return Number(process.hrtime.bigint() - t) / 1e6;
  }));
}

function statSyncSafe(path) {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}
