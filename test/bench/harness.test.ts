import { execFile } from 'node:child_process';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { missing } from '../helpers/services.js';

const HARNESS = join(ROOT, 'bench/run.mjs');
const RESULTS = join(ROOT, 'bench/results.md');
// GNU parallel is the harness's prerequisite. Without it the runs are skipped, except under
// CI, which installs it: there they run, and fail loudly if it is missing.
const RUNNABLE = !!process.env.CI || !missing('parallel', 'the benchmark harness runs');

/** Runs `npm run bench`'s script (the build is already there) with extra environment. */
function bench(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [HARNESS], { cwd: ROOT, env: { ...process.env, ...env }, timeout: 150_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr });
    });
    child.stdin?.end();
  });
}

/** One smoke run of every benchmark but PostgreSQL, shared by the tests that read its table. */
let smoke: ReturnType<typeof bench> | undefined;
const smokeRun = () => (smoke ??= bench({ BENCH_SIZE: 'smoke', BENCH_ONLY: 'shell,handler,gzip,latency,scale,split,order,adaptive,ten' }));

/** The cells of each row of the printed results table (header and rule left out). */
function tableRows(stdout: string): string[][] {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('| ') && !l.startsWith('| benchmark') && !l.startsWith('| ---'))
    .map((l) => l.slice(2, -2).split(' | '));
}

/** A failed benchmark keeps its work files for inspection; the tests remove them. */
function removeKeptWork(stderr: string): void {
  const kept = /work files kept in (\S+)\)/.exec(stderr);
  if (kept) rmSync(kept[1]!, { recursive: true, force: true });
}

// The harness itself, at tiny sizes: its figures mean nothing here, only that every
// benchmark runs, checks its work and lands in the table. (Timing goals live in `npm run bench`.)
describe('npm run bench (BENCH_SIZE=smoke)', () => {
  it.runIf(RUNNABLE)('runs every benchmark but PostgreSQL, prints a row each with its rates, and leaves bench/results.md alone under BENCH_ONLY', async () => {
    const before = { text: readFileSync(RESULTS, 'utf8'), mtime: statSync(RESULTS).mtimeMs };
    const r = await smokeRun();
    expect(r.code, r.stderr).toBe(0);
    const rows = tableRows(r.stdout);
    expect(rows.map((row) => row[0])).toEqual(['machine', 'shell tasks', 'handler tasks', 'real workload', 'latency', 'scale', 'split', 'order', 'adaptive', 'ten million']);
    for (const row of rows) {
      const rates = [...row[2]!.matchAll(/: (\d+)\/s/g)].map((m) => Number(m[1]));
      expect(rates.length, row.join(' | ')).toBeGreaterThan(0);
      expect(rates.every((x) => x > 0), row.join(' | ')).toBe(true);
    }
    const [, shell, handler, , latency, scale, split, order, adaptive, ten] = rows as string[][];
    expect(shell![3]).toMatch(/× parallel --joblog, [\d.]+× xargs -P2/);
    expect(handler![3]).toMatch(/[\d.]+× bare fork\/IPC ping-pong/);
    expect(latency![3]).toMatch(/^[\d.]+× xargs -P2; -?[\d.]+ ms lost per task$/);
    expect(scale![2]).toMatch(/peak RSS \d+ MB \(largest process\); status [\d.]+ s/);
    expect(split![2]).toMatch(/enqueued in [\d.]+ s/);
    expect(order![3]).toMatch(/^--order size [\d.]+× LB, key order [\d.]+× LB$/);
    expect(ten![2]).toMatch(/peak RSS \d+ MB \(largest process\); status \d+ ms \(node -e 0: \d+ ms(; without NODE_EXTRA_CA_CERTS: status \d+ ms, node -e 0 \d+ ms)?\); results --jsonl \d+ rows\/s; \d+ log files per 10,000 attempts/);
    expect(adaptive![3]).toMatch(/^\d+% of 20 req\/s after ([\d.]+ s|never), [\d.]+% busy$/);
    expect(r.stdout).toMatch(/medians of 1 run\(s\), the tools of a benchmark interleaved \(BENCH_SIZE=smoke\)/);
    expect({ text: readFileSync(RESULTS, 'utf8'), mtime: statSync(RESULTS).mtimeMs }).toEqual(before);
  }, 180_000);

  it.runIf(RUNNABLE)("reports splitdance's own cost per task at -j 1 and -j 2 beside the baseline, the machine's rates, and a verdict per goal", async () => {
    const r = await smokeRun();
    expect(r.code, r.stderr).toBe(0);
    const rows = Object.fromEntries(tableRows(r.stdout).map((row) => [row[0], row]));
    // The machine's rates, above the table and as its first row.
    const stated = /^This machine starts processes at: xargs -P2 -n1 true (\d+) tasks\/s, GNU parallel -j2 --joblog (\d+) tasks\/s\.$/m.exec(r.stdout);
    expect(stated, r.stdout).not.toBeNull();
    expect(rows.machine![2]).toBe(`xargs -P2 -n1 true: ${stated![1]}/s<br>parallel -j2 --joblog true: ${stated![2]}/s`);
    // Own cost: wall and CPU in µs at -j 1 and -j 2, each beyond its baseline at the same slots.
    const own = (base: (slots: number) => string) =>
      new RegExp(`^-j 1: wall -?\\d+ µs, CPU -?\\d+ µs \\(beyond ${base(1)}\\)<br>-j 2: wall -?\\d+ µs, CPU -?\\d+ µs \\(beyond ${base(2)}\\)$`);
    for (const name of ['shell tasks', 'real workload', 'latency']) {
      expect(rows[name]![4], name).toMatch(own((j) => `xargs -P${j}`));
      expect(rows[name]![2], name).toMatch(/splitdance -j 1: \d+\/s<br>xargs -P1: \d+\/s$/);
    }
    expect(rows['handler tasks']![4]).toMatch(own((j) => `ping-pong, ${j} workers?`));
    // The latency row's ms lost per task is its own wall cost at -j 2.
    const lost = Number(/; (-?[\d.]+) ms lost per task/.exec(rows.latency![3]!)![1]);
    const wall2 = Number(/-j 2: wall (-?\d+) µs/.exec(rows.latency![4]!)![1]);
    expect(Math.abs(lost * 1000 - wall2)).toBeLessThanOrEqual(6);
    // One plain verdict per goal, from this run's figures.
    for (const row of Object.values(rows).filter((row) => row[0] !== 'machine')) {
      const goals = row[5]!.split(', ');
      const verdicts = row[6]!.split('<br>');
      expect(verdicts.map((v) => /^(?:met|not met) \((.+): .+\)$/.exec(v)?.[1]), row.join(' | ')).toEqual(goals);
      // A ratio goal is met exactly when the ratio this run measured reaches it.
      for (const v of verdicts) {
        const ratio = /^(met|not met) \(≥ ([\d.]+)× [^:]+: ([\d.]+)×\)$/.exec(v);
        if (ratio && Math.abs(Number(ratio[3]) - Number(ratio[2])) > 0.001) expect(ratio[1] === 'met', v).toBe(Number(ratio[3]) >= Number(ratio[2]));
      }
    }
    expect(rows['shell tasks']![6]).toMatch(/^(?:met|not met) \(≥ 5× parallel: [\d.]+×\)<br>(?:met|not met) \(≥ 1\.0× xargs: [\d.]+×\)$/);
    expect(rows.latency![5]).toBe('≥ 0.97× xargs, ≤ 0.3 ms lost per task');
  }, 180_000);

  it.runIf(RUNNABLE)('watch: the same batch with and without a watcher following it, and their ratio (BENCH_WATCH_N tasks)', async () => {
    const r = await bench({ BENCH_SIZE: 'smoke', BENCH_ONLY: 'watch', BENCH_WATCH_N: '1500' });
    expect(r.code, r.stderr).toBe(0);
    const row = tableRows(r.stdout).find((cells) => cells[0] === 'watch');
    expect(row, r.stdout).toBeDefined();
    expect(row![1]).toMatch(/^1500 no-op JS tasks/);
    expect(row![2]).toMatch(/^unwatched: \d+\/s<br>watched: \d+\/s$/);
    expect(row![3]).toMatch(/^watched run took [\d.]+× the unwatched one$/);
    expect(row![6]).toMatch(/^(?:met|not met) \(watched ≤ 1\.05× unwatched: [\d.]+×\)$/);
  }, 120_000);

  it.runIf(RUNNABLE)('start-up: --version, status and a one-task run, each beside node -e 0 in the same run, with a verdict per goal', async () => {
    const r = await bench({ BENCH_SIZE: 'smoke', BENCH_ONLY: 'startup' });
    expect(r.code, r.stderr).toBe(0);
    const rows = Object.fromEntries(tableRows(r.stdout).map((row) => [row[0], row]));
    const row = rows['start-up']!;
    expect(row[2]).toMatch(/^node -e 0: \d+\/s \(\d+ ms\)<br>splitdance --version: \d+\/s \(\d+ ms, [\d.]+× node\)<br>splitdance status: \d+\/s \(\d+ ms, [\d.]+× node\)<br>splitdance run \(one task, new store\): \d+\/s \(\d+ ms, [\d.]+× node\)$/);
    expect(row[5]).toBe('--version ≤ 1.3× node, status ≤ 1.8× node, one-task run ≤ 2.5× node');
    expect(row[6]!.split('<br>').map((v) => /^(?:met|not met) \((.+): [\d.]+×\)$/.exec(v)?.[1])).toEqual(row[5]!.split(', '));
  }, 120_000);

  it.runIf(RUNNABLE)('items: a list from stdin vs xargs and parallel on the same list, and a million (here: a few) items enqueued with their peak RSS', async () => {
    const r = await bench({ BENCH_SIZE: 'smoke', BENCH_ONLY: 'items' });
    expect(r.code, r.stderr).toBe(0);
    const rows = Object.fromEntries(tableRows(r.stdout).map((row) => [row[0], row]));
    expect(rows.items![1]).toBe("30 items from stdin, --exec 'true {}'");
    expect(rows.items![2]).toMatch(/^splitdance -j 2: \d+\/s<br>parallel -j2 --joblog: \d+\/s<br>xargs -P2: \d+\/s/);
    expect(rows.items![3]).toMatch(/× parallel --joblog, [\d.]+× xargs -P2/);
    expect(rows['items enqueue']![2]).toMatch(/^splitdance run -: \d+\/s \(peak RSS \d+ MB \(largest process\); enqueued in [\d.]+ s\)$/);
  }, 120_000);

  it.runIf(RUNNABLE)('groups: -n 64 beside xargs -n1, parallel and xargs -n64 on the same list, and a batch handler beside the ping-pong, own cost per item', async () => {
    const r = await bench({ BENCH_SIZE: 'smoke', BENCH_ONLY: 'groups' });
    expect(r.code, r.stderr).toBe(0);
    const rows = Object.fromEntries(tableRows(r.stdout).map((row) => [row[0], row]));
    const many = rows['many items per call']!;
    expect(many[1]).toBe('200 items, --exec true -n 64, a task row each');
    expect(many[2]).toMatch(/^splitdance -j 2 -n 64: \d+\/s \(CPU \d+ µs per item\)<br>xargs -P2 -n1: \d+\/s<br>parallel -j2 --joblog: \d+\/s<br>xargs -P2 -n64: \d+\/s$/);
    expect(many[3]).toMatch(/^[\d.]+× xargs -P2 -n1, [\d.]+× parallel --joblog, [\d.]+× xargs -P2 -n64$/);
    expect(many[4]).toMatch(/^-j 2: wall -?\d+ µs, CPU -?\d+ µs \(beyond xargs -P2 -n64\)$/);
    expect(many[6]).toMatch(/^(?:met|not met) \(≥ 2× xargs -n1: [\d.]+×\)<br>(?:met|not met) \(≥ 10× parallel: [\d.]+×\)$/);
    const grouped = rows['grouped handler']!;
    expect(grouped[1]).toBe('300 no-op JS tasks, a batch export, an attempt row each');
    expect(grouped[2]).toMatch(/^splitdance -j 2, batch export: \d+\/s \(CPU \d+ µs per task\)<br>bare fork\/IPC ping-pong, 2 workers: \d+\/s<br>splitdance -j 2, one task per call: \d+\/s \(CPU \d+ µs per task\)$/);
    expect(grouped[3]).toMatch(/^[\d.]+× bare fork\/IPC ping-pong, [\d.]+× one task per call$/);
    expect(grouped[4]).toMatch(/^-j 2: wall -?\d+ µs, CPU -?\d+ µs \(beyond ping-pong, 2 workers\)$/);
    expect(grouped[6]).toMatch(/^(?:met|not met) \(≥ 1\.25× ping-pong: [\d.]+×\)$/);
  }, 120_000);

  it.runIf(RUNNABLE)('fails, naming the benchmark, when a run does not complete (no figure for work not done)', async () => {
    // The store's failpoint SIGKILLs the coordinator after its third commit.
    const r = await bench({ BENCH_SIZE: 'smoke', BENCH_ONLY: 'scale', SPLITDANCE_FAILPOINT: 'write:3' });
    removeKeptWork(r.stderr);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^bench: scale: splitdance run exited SIGKILL, not 0/m);
    expect(r.stdout).not.toMatch(/\| scale \|/);
  }, 60_000);

  it('exits 2 with the install command when GNU parallel is missing, and on unknown settings', async () => {
    const noParallel = await bench({ BENCH_SIZE: 'smoke', PATH: '/nonexistent' });
    expect(noParallel.code).toBe(2);
    expect(noParallel.stderr).toMatch(/GNU parallel is needed for the comparison: apt-get install parallel/);
    const size = await bench({ BENCH_SIZE: 'huge' });
    expect(size.code).toBe(2);
    expect(size.stderr).toMatch(/BENCH_SIZE must be one of full, quick, smoke, not "huge"/);
    const only = await bench({ BENCH_ONLY: 'shell,gzp' });
    expect(only.code).toBe(2);
    expect(only.stderr).toMatch(/BENCH_ONLY names unknown benchmarks \(gzp\)/);
  }, 60_000);

  it.runIf(RUNNABLE)('exits 2 without a C compiler: it could not count the CPU of what the tools start', async () => {
    const r = await bench({ BENCH_SIZE: 'smoke', CC: '/nonexistent/cc' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^A C compiler is needed to count the CPU of every process a tool starts \(bench\/reap\.c\); \/nonexistent\/cc failed/m);
    expect(r.stdout).toBe('');
  }, 60_000);
});
