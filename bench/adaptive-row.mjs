// --adaptive against a service that is busy above 20 requests a second (BENCH.md's adaptive
// row): a loopback HTTP server (busy-service.mjs, its own process) serves each request in
// 150 ms, so 3 at once is all it takes; `run --adaptive -j 16` with a handler that turns a
// 503 into RetryLater. Measured from the service's side: when its successes first reach 90% of
// 20/s over a 5 s window, their rate from then on, and the share of requests answered busy.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SIZES } from './settings.mjs';
import { BIN, ROOT, benchmark, fail, expectTasks, work } from './measure.mjs';
import { atMost, below } from './verdict.mjs';

const LIMIT = 20;
const HOLD_MS = 150;
const WINDOW_MS = 5000;
const sleepMs = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** The first time (ms) a WINDOW_MS window of successes ending there held ≥ `rate`/s, or null. */
function reached(ok, rate) {
  for (let i = 0, j = 0; i < ok.length; i++) {
    while (ok[j] <= ok[i] - WINDOW_MS) j++;
    if (ok[i] >= WINDOW_MS && ((i - j + 1) * 1000) / WINDOW_MS >= rate) return ok[i];
  }
  return null;
}

export function adaptive() {
  benchmark('adaptive');
  const n = SIZES.adaptive;
  const dir = join(work, 'adaptive');
  rmSync(dir, { recursive: true, force: true });
  spawnSync('mkdir', ['-p', dir]);
  writeFileSync(join(work, 'adaptive.list'), Array.from({ length: n }, (_, i) => `call-${i}`).join('\n') + '\n');
  const portFile = join(work, 'adaptive.port');
  const statsFile = join(work, 'adaptive.stats');
  rmSync(portFile, { force: true });
  const service = spawn(process.execPath, [join(ROOT, 'bench/busy-service.mjs'), portFile, statsFile, String(LIMIT), String(HOLD_MS)], { stdio: 'ignore' });
  for (let i = 0; i < 500 && !existsSync(portFile); i++) sleepMs(10);
  if (!existsSync(portFile)) fail('the loopback service did not start');
  const url = `http://127.0.0.1:${readFileSync(portFile, 'utf8')}`;
  const handler = join(ROOT, 'fixtures/handlers/busy-service.mjs');
  const t = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [BIN, 'run', '-', '--handler', handler, '--adaptive', '-j', '16', '--retries', '0', '--quiet'], {
    cwd: dir,
    input: readFileSync(join(work, 'adaptive.list')),
    env: { ...process.env, BUSY_SERVICE: url },
    encoding: 'utf8',
  });
  const wall = Number(process.hrtime.bigint() - t) / 1e9;
  service.kill('SIGTERM');
  for (let i = 0; i < 500 && !existsSync(statsFile); i++) sleepMs(10);
  if (r.status !== 0) fail(`splitdance run --adaptive exited ${r.status ?? r.signal}: ${r.stderr.trim()}`);
  expectTasks(dir, n);
  const { ok, busy } = JSON.parse(readFileSync(statsFile, 'utf8'));
  const at = reached(ok, 0.9 * LIMIT);
  const after = at === null ? 0 : ((ok.filter((x) => x > at).length) * 1000) / Math.max(1, ok.at(-1) - at);
  const busyShare = busy.length / (ok.length + busy.length);
  const reachS = at === null ? Number.POSITIVE_INFINITY : at / 1000;
  const shownReach = at === null ? 'never' : `${reachS.toFixed(1)} s`;
  return {
    benchmark: 'adaptive',
    workload: `${n} calls of a loopback service busy above ${LIMIT} req/s (${HOLD_MS} ms each), --adaptive -j 16`,
    entries: [
      { name: 'splitdance --adaptive -j 16', rate: n / wall, note: `90% of ${LIMIT}/s after ${shownReach}, then ${after.toFixed(1)} req/s; ${busy.length} of ${ok.length + busy.length} answered busy (${(100 * busyShare).toFixed(1)}%)` },
      { name: 'the service\'s limit', rate: LIMIT, note: `${LIMIT} req/s` },
    ],
    ratio: `${(after / LIMIT * 100).toFixed(0)}% of ${LIMIT} req/s after ${shownReach}, ${(100 * busyShare).toFixed(1)}% busy`,
    goals: [atMost('90% of 20 req/s within 30 s', reachS, 30, shownReach), below('< 5% answered busy', busyShare, 0.05, `${(100 * busyShare).toFixed(1)}%`)],
  };
}
