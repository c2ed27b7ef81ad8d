// How the bench times a tool and counts its CPU, and the checks that a run did its work.
//
// Every command measured for a comparison runs under bench/reap.c, a child subreaper that
// waits for the command and for every process it left behind, then reports getrusage
// (RUSAGE_CHILDREN): the user + system CPU of the whole tree, including helpers that
// outlived their parent (which a plain cutime+cstime reading of /proc/self/stat would miss),
// in µs rather than clock ticks. Wall time is taken around the same spawnSync, so both sides
// of a comparison pay the same meter.
// Settings first: a refused setting exits before any work directory is made.
import './settings.mjs';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const BIN = join(ROOT, 'bin/splitdance.js');
export const work = mkdtempSync(join(tmpdir(), 'sd-bench-'));

const METER = join(work, 'reap');
const cc = process.env.CC || 'cc';
const built = spawnSync(cc, ['-O2', '-std=c11', '-Wall', '-o', METER, join(ROOT, 'bench/reap.c')], { encoding: 'utf8' });
if (built.status !== 0) {
  rmSync(work, { recursive: true, force: true });
  console.error(`A C compiler is needed to count the CPU of every process a tool starts (bench/reap.c); ${cc} failed: ${built.error?.message ?? built.stderr.trim()}`);
  process.exit(2);
}

/** The benchmark running now, named when a check fails. */
let current = '';
export const benchmark = (name) => {
  current = name;
};
/** A benchmark that did not do its work has no figure: say what went wrong and stop. */
export function fail(message) {
  console.error(`bench: ${current}: ${message} (work files kept in ${work})`);
  process.exit(1);
}

const signalName = (n) => Object.keys(constants.signals).find((k) => constants.signals[k] === n) ?? `signal ${n}`;

/**
 * Runs argv (stdin from a file, or none) under the meter: { wall, cpu } in seconds.
 * Anything but the expected exit code fails the benchmark.
 */
export function measure(argv, { cwd = work, stdin, expectCode = 0 } = {}) {
  const input = stdin ? openSync(stdin, 'r') : 'ignore';
  const t = process.hrtime.bigint();
  const r = spawnSync(METER, argv, { cwd, stdio: [input, 'pipe', 'pipe'], encoding: 'utf8' });
  const wall = Number(process.hrtime.bigint() - t) / 1e9;
  if (stdin) closeSync(input);
  const [user, sys, code, signal] = r.stdout.trim().split(' ').map(Number);
  if (r.status === 125 || r.error || !Number.isFinite(signal)) fail(`the CPU meter could not run ${argv[0]}: ${r.error?.message ?? r.stderr.trim()}`);
  if (code !== expectCode) {
    const name = argv[0] === process.execPath ? 'splitdance' : argv[0];
    const args = argv[0] === process.execPath ? argv.slice(2) : argv.slice(1);
    fail(`${name} ${args.join(' ')} exited ${signal ? signalName(signal) : code}, not ${expectCode}: ${r.stderr.trim()}`);
  }
  return { wall, cpu: (user + sys) / 1e6 };
}

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * Runs each variant `runs` times, interleaved (a, b, a, b …) so that a noisy stretch of the
 * machine hits every tool alike; returns each variant's median wall and median CPU.
 */
export function sideBySide(variants, runs) {
  const seen = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  for (let r = 0; r < runs; r++) for (const [k, run] of Object.entries(variants)) seen[k].push(run());
  return Object.fromEntries(Object.entries(seen).map(([k, ms]) => [k, { wall: median(ms.map((m) => m.wall)), cpu: median(ms.map((m) => m.cpu)) }]));
}

/** The CLI on a fresh store in `cwd`, measured. */
export function splitdance(args, cwd = work, expectCode = 0) {
  rmSync(join(cwd, '.splitdance'), { recursive: true, force: true });
  return measure([process.execPath, BIN, ...args], { cwd, expectCode });
}

/** `status --json` of the store in `cwd` (or `--db`); its exit is the batch's verdict (0 done, 1 failures, 3 not done). */
export function status(cwd = work, dbArgs = []) {
  const r = spawnSync(process.execPath, [BIN, 'status', '--json', ...dbArgs], { cwd, encoding: 'utf8' });
  if (![0, 1, 3].includes(r.status)) fail(`splitdance status exited ${r.status ?? r.signal}: ${r.stderr.trim()}`);
  return JSON.parse(r.stdout);
}

/** The run's batch holds `n` tasks and (unless it was only enqueued) every one succeeded. */
export function expectTasks(cwd, n, { dbArgs = [], enqueuedOnly = false } = {}) {
  const s = status(cwd, dbArgs);
  if (s.total !== n || (!enqueuedOnly && s.succeeded !== n)) {
    fail(`expected ${n} tasks${enqueuedOnly ? '' : ', all succeeded'}; the store has ${s.total}, ${s.succeeded} succeeded`);
  }
}

/** A measured run on a fresh store whose `n` tasks must all have succeeded. */
export function timedRun(n, args, cwd = work, dbArgs = []) {
  const m = splitdance(args, cwd);
  expectTasks(cwd, n, { dbArgs });
  return m;
}

/** A directory of `n` files (one task each) and, beside it, `<name>.list` of their paths. */
export function filesDir(name, n, content = '') {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < n; i++) writeFileSync(join(dir, `f${String(i).padStart(7, '0')}`), content);
  writeFileSync(join(work, `${name}.list`), readdirSync(dir).map((f) => join(dir, f)).join('\n') + '\n');
  return dir;
}

/** `<name>` in the work folder: `n` distinct items, one a line, `itemOf(i)` each. */
export function itemsList(name, n, itemOf) {
  const path = join(work, name);
  const lines = new Array(n);
  for (let i = 0; i < n; i++) lines[i] = itemOf(i);
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}
