#!/usr/bin/env node
// `npm run bench`: splitdance side by side with what people use instead, on this machine,
// in one process of measurement. Medians of several runs; ratios printed and written to
// bench/results.md. Prerequisite: GNU parallel (`apt-get install parallel`). Installs nothing.
import { fork, spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin/splitdance.js');
const NOOP = join(ROOT, 'fixtures/handlers/ok.mjs');
/**
 * BENCH_SIZE: `full` (the default: the sizes of BENCH.md's goals, medians of 3 runs),
 * `quick` (smaller, one run; BENCH_QUICK=1 is the same) or `smoke` (tiny, one run: the test
 * suite runs it to keep this harness working; its figures mean nothing).
 */
const SIZE = process.env.BENCH_SIZE ?? (process.env.BENCH_QUICK === '1' ? 'quick' : 'full');
const PRESETS = {
  full: { runs: 3, shell: 1000, handler: 40_000, million: 1_000_000, split: 100_000, pg: 10_000, gzipTree: 'node_modules/zod' },
  quick: { runs: 1, shell: 300, handler: 10_000, million: 100_000, split: 20_000, pg: 2000, gzipTree: 'node_modules/zod' },
  smoke: { runs: 1, shell: 20, handler: 300, million: 2000, split: 300, pg: 200, gzipTree: 'node_modules/commander' },
};
const SIZES = PRESETS[SIZE];
if (!SIZES) {
  console.error(`BENCH_SIZE must be one of ${Object.keys(PRESETS).join(', ')}, not "${SIZE}"`);
  process.exit(2);
}
const RUNS = SIZES.runs;
/** BENCH_ONLY=shell,gzip runs only those benchmarks (shell, handler, gzip, scale, split, pg) and writes no results file. */
const NAMES = ['shell', 'handler', 'gzip', 'scale', 'split', 'pg'];
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : null;
const unknown = [...(ONLY ?? [])].filter((n) => !NAMES.includes(n));
if (unknown.length) {
  console.error(`BENCH_ONLY names unknown benchmarks (${unknown.join(', ')}); the benchmarks are ${NAMES.join(', ')}`);
  process.exit(2);
}
const want = (name) => !ONLY || ONLY.has(name);

if (spawnSync('parallel', ['--version'], { stdio: 'ignore' }).status !== 0) {
  console.error('GNU parallel is needed for the comparison: apt-get install parallel');
  process.exit(2);
}
const work = mkdtempSync(join(tmpdir(), 'sd-bench-'));
const rows = [];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const secs = (f) => {
  const t = process.hrtime.bigint();
  f();
  return Number(process.hrtime.bigint() - t) / 1e9;
};
const sh = (cmd) => {
  const r = spawnSync('/bin/sh', ['-c', cmd], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (r.status !== 0) fail(`${cmd} exited ${r.status ?? r.signal}: ${r.stderr.trim()}`);
};
/** The benchmark running now, named when a check fails. */
let current = '';
/** A benchmark that did not do its work has no figure: say what went wrong and stop. */
function fail(message) {
  console.error(`bench: ${current}: ${message} (work files kept in ${work})`);
  process.exit(1);
}
/** Runs the CLI on a fresh store; anything but the expected exit code fails the benchmark. */
const splitdance = (args, cwd, expectCode = 0) => {
  rmSync(join(cwd, '.splitdance'), { recursive: true, force: true });
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (r.status !== expectCode) fail(`splitdance ${args.join(' ')} exited ${r.status ?? r.signal}, not ${expectCode}: ${r.stderr.trim()}`);
};
/** `status --json` of the store in `cwd` (or `--db`). */
function status(cwd, dbArgs = []) {
  const r = spawnSync(process.execPath, [BIN, 'status', '--json', ...dbArgs], { cwd, encoding: 'utf8' });
  if (r.status !== 0) fail(`splitdance status exited ${r.status ?? r.signal}: ${r.stderr.trim()}`);
  return JSON.parse(r.stdout);
}
/** The run's batch holds `n` tasks and (unless it was only enqueued) every one succeeded. */
function expectTasks(cwd, n, { dbArgs = [], enqueuedOnly = false } = {}) {
  const s = status(cwd, dbArgs);
  if (s.total !== n || (!enqueuedOnly && s.succeeded !== n)) {
    fail(`expected ${n} tasks${enqueuedOnly ? '' : ', all succeeded'}; the store has ${s.total}, ${s.succeeded} succeeded`);
  }
}
/** Times a run on a fresh store, then checks that every one of its `n` tasks succeeded. */
const timedRun = (n, args, cwd, dbArgs = []) => {
  const s = secs(() => splitdance(args, cwd));
  expectTasks(cwd, n, { dbArgs });
  return s;
};
const rate = (n, s) => n / s;
function record(benchmark, workload, entries, goal) {
  rows.push({ benchmark, workload, entries, goal });
  console.log(`${benchmark}: ${entries.map((e) => `${e.name} ${e.rate.toFixed(0)}/s`).join(', ')}`);
}

function filesDir(name, n, content = '') {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < n; i++) writeFileSync(join(dir, `f${String(i).padStart(7, '0')}`), content);
  writeFileSync(join(work, `${name}.list`), readdirSync(dir).map((f) => join(dir, f)).join('\n') + '\n');
  return dir;
}

// 1. Shell tasks: one spawn of `true` per file.
if (want('shell')) {
  current = 'shell tasks';
  const n = SIZES.shell;
  const dir = filesDir('shell', n);
  const list = join(work, 'shell.list');
  const sd = median(Array.from({ length: RUNS }, () => timedRun(n, ['run', dir, '--exec', 'true', '-j', '2', '--quiet'], work)));
  const par = median(Array.from({ length: RUNS }, () => secs(() => sh(`parallel -j2 --joblog ${work}/joblog true < ${list}`))));
  const xargs = median(Array.from({ length: RUNS }, () => secs(() => sh(`xargs -P2 -n1 true < ${list}`))));
  record('shell tasks', `${n} files, --exec true, -j 2`, [
    { name: 'splitdance', rate: rate(n, sd) },
    { name: 'parallel --joblog', rate: rate(n, par) },
    { name: 'xargs -P2', rate: rate(n, xargs) },
  ], '≥ 5× parallel, ≥ 1.0× xargs');
}

// 2. No-op handler tasks vs a bare fork/IPC ping-pong with one message in flight per worker.
if (want('handler')) {
  current = 'handler tasks';
  const n = SIZES.handler;
  const file = join(work, 'handler.txt');
  writeFileSync(file, 'x\n'.repeat(n));
  const sd = median(Array.from({ length: RUNS }, () => timedRun(n, ['run', file, '--lines', '1', '--handler', NOOP, '-j', '2', '--quiet'], work)));
  const pings = [];
  for (let r = 0; r < RUNS; r++) pings.push(await pingPong(n, 2));
  record('handler tasks', `${n} no-op JS tasks, -j 2, an attempt row each`, [
    { name: 'splitdance', rate: rate(n, sd) },
    { name: 'bare fork/IPC ping-pong', rate: rate(n, median(pings)) },
  ], '≥ 30,000/s and ≥ 1.25× ping-pong');
}

// 3. A real workload: gzip every file of a package tree from node_modules (zod's: some 840
// files of every size, a pile of files like the ones splitdance is for).
if (want('gzip')) {
  current = 'real workload';
  const tree = join(work, 'tree');
  cpSync(join(ROOT, SIZES.gzipTree), tree, { recursive: true });
  const files = readdirSync(tree, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath ?? e.path, e.name));
  writeFileSync(join(work, 'tree.list'), files.join('\n') + '\n');
  const n = files.length;
  const clean = () => sh(`find ${tree} -name '*.gz' -delete`);
  // Each tool must have compressed every file, or its time says nothing.
  const gzipped = (tool, s) => {
    const made = readdirSync(tree, { recursive: true }).filter((f) => String(f).endsWith('.gz')).length;
    if (made !== n) fail(`${tool} left ${made} of ${n} files compressed`);
    return s;
  };
  const timed = (tool, f) => median(Array.from({ length: RUNS }, () => { clean(); return gzipped(tool, secs(f)); }));
  const sd = timed('splitdance', () => splitdance(['run', tree, '--exec', 'gzip -kf {}', '-j', '2', '--quiet'], work));
  expectTasks(work, n);
  const par = timed('parallel', () => sh(`parallel -j2 --joblog ${work}/joblog2 gzip -kf < ${work}/tree.list`));
  const xargs = timed('xargs', () => sh(`xargs -P2 -n1 gzip -kf < ${work}/tree.list`));
  record('real workload', `gzip ${n} files of ${SIZES.gzipTree}`, [
    { name: 'splitdance', rate: rate(n, sd) },
    { name: 'parallel --joblog', rate: rate(n, par) },
    { name: 'xargs -P2', rate: rate(n, xargs) },
  ], '≥ 1.0× xargs, ≥ 1.5× parallel');
}

// 4. Scale: a million one-line tasks; peak RSS of every process; status latency.
if (want('scale')) {
  current = 'scale';
  const n = SIZES.million;
  const file = join(work, 'million.txt');
  writeFileSync(file, 'x\n'.repeat(n));
  rmSync(join(work, '.splitdance'), { recursive: true, force: true });
  const { seconds, peakRss, code } = await withPeakRss([BIN, 'run', file, '--lines', '1', '--handler', NOOP, '-j', '2', '--quiet'], work);
  if (code !== 0) fail(`splitdance run exited ${code}, not 0`);
  expectTasks(work, n); // "completes": every task succeeded
  const statusSecs = median(Array.from({ length: 5 }, () => secs(() => status(work))));
  record('scale', `${n} tasks (--lines 1), no-op handler`, [
    { name: 'splitdance', rate: rate(n, seconds), note: `peak RSS ${(peakRss / 1048576).toFixed(0)} MB (largest process); status ${statusSecs.toFixed(2)} s` },
  ], 'completes; every process ≤ 200 MB; status < 0.5 s');
}

// 5. Split: enqueue a directory of many files (time to the start event).
if (want('split')) {
  current = 'split';
  const n = SIZES.split;
  const dir = filesDir('split', n);
  const t = median(Array.from({ length: RUNS }, () => secs(() => splitdance(['run', dir, '--exec', 'true', '--dry-run'], work))));
  // Stopped by --max-runtime right after the enqueue: exit 3 (incomplete), every file a task.
  const full = median(Array.from({ length: RUNS }, () => {
    const s = secs(() => splitdance(['run', dir, '--exec', 'true', '--max-runtime', '1ms', '-j', '1'], work, 3));
    expectTasks(work, n, { enqueuedOnly: true });
    return s;
  }));
  record('split', `${n} files in a directory`, [
    { name: 'splitdance (walk only, --dry-run)', rate: rate(n, t) },
    { name: 'splitdance (walk + enqueue, run stopped at once)', rate: rate(n, full), note: `enqueued in ${full.toFixed(2)} s` },
  ], '≤ 5 s');
  rows.at(-1).noRatio = true;
}

// 6. Shared store: the handler benchmark on PostgreSQL with 1, 2 and 4 worker processes.
if (want('pg') && process.env.SPLITDANCE_PG_URL) {
  current = 'shared store';
  const n = SIZES.pg;
  const file = join(work, 'pg.txt');
  writeFileSync(file, 'x\n'.repeat(n));
  const entries = [];
  for (const j of [1, 2, 4]) {
    const db = `${process.env.SPLITDANCE_PG_URL}${process.env.SPLITDANCE_PG_URL.includes('?') ? '&' : '?'}schema=bench_${process.pid}_${j}`;
    const s = timedRun(n, ['run', file, '--db', db, '--batch', `pg-${j}`, '--lines', '1', '--handler', NOOP, '-j', String(j), '--quiet'], work, ['--db', db, '--batch', `pg-${j}`]);
    entries.push({ name: `-j ${j}`, rate: rate(n, s) });
  }
  record('shared store', `${n} no-op tasks on PostgreSQL`, entries, 'grows with workers until the server is busy');
  rows.at(-1).noRatio = true;
}

function pingPong(total, workers) {
  const child = `process.on('message', (m) => process.send(m));`;
  const path = join(work, 'echo.cjs');
  writeFileSync(path, child);
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    let sent = 0;
    let got = 0;
    const kids = Array.from({ length: workers }, () => fork(path));
    for (const k of kids) {
      k.on('message', () => {
        if (++got === total) {
          kids.forEach((c) => c.kill());
          resolve(Number(process.hrtime.bigint() - t0) / 1e9);
        } else if (sent < total) {
          sent++;
          k.send({ type: 'run', token: sent });
        }
      });
      sent++;
      k.send({ type: 'run', token: sent });
    }
  });
}

/** Runs a command and samples the RSS of it and all its descendants; returns the largest. */
function withPeakRss(args, cwd) {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(process.execPath, args, { cwd, stdio: 'ignore' });
    let peak = 0;
    const sample = () => {
      for (const pid of [child.pid, ...descendants(child.pid)]) {
        try {
          const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
          if (m) peak = Math.max(peak, Number(m[1]) * 1024);
        } catch {}
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

// The table.
const lines = [
  `# splitdance benchmarks`,
  '',
  `${availableParallelism()} cores, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}; medians of ${RUNS} run(s)${SIZE === 'full' ? '' : ` (BENCH_SIZE=${SIZE})`}.`,
  '',
  '| benchmark | workload | results | ratio | goal |',
  '| --- | --- | --- | --- | --- |',
];
for (const r of rows) {
  const [me, ...others] = r.entries;
  const ratios = r.noRatio ? '—' : others.map((o) => `${(me.rate / o.rate).toFixed(2)}× ${o.name}`).join(', ') || '—';
  const results = r.entries.map((e) => `${e.name}: ${e.rate.toFixed(0)}/s${e.note ? ` (${e.note})` : ''}`).join('<br>');
  lines.push(`| ${r.benchmark} | ${r.workload} | ${results} | ${ratios} | ${r.goal} |`);
}
const table = lines.join('\n') + '\n';
if (!ONLY) {
  mkdirSync(join(ROOT, 'bench'), { recursive: true });
  writeFileSync(join(ROOT, 'bench/results.md'), table);
}
console.log(`\n${table}`);
rmSync(work, { recursive: true, force: true });
