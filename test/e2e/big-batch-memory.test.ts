import Database from 'better-sqlite3';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../helpers/cli.js';
import { dbPathIn } from '../helpers/store.js';

// Audit item 11: `tasks`, `tasks --json`, `logs --batch` and `cancel` read the whole batch into
// memory (0.6–1.4 GB per million tasks; at 4.5M `tasks --json` ended with exit 70, "Invalid
// string length"). They go page by page (range by range for cancel) now, so the memory a
// command needs does not grow with the batch. Checked through the built binary on two stores,
// one with twice the tasks of the other: the peak memory of each command is the same for both.

const SMALL = 100_000;
const dirs: string[] = [];
let small: string;
let big: string;
let preload: string;

/** A store whose batch `b` holds `n` PENDING tasks k0…k(n-1): one made by a run, the rest copied from it by SQL. */
async function storeWith(n: number): Promise<string> {
  const dir = tempDir('sd-bigmem-');
  dirs.push(dir);
  writeFileSync(join(dir, 'one.txt'), 'one\n');
  const made = await runCli(['run', 'one.txt', '--batch', 'b', '--exec', 'true', '--lines', '1', '--max-runtime', '1ms', '--quiet'], { cwd: dir });
  expect([0, 3], made.stderr).toContain(made.code);
  const db = new Database(dbPathIn(dir));
  try {
    db.exec('DELETE FROM attempts; DELETE FROM tasks');
    db.prepare(`
      WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
      INSERT INTO tasks (batch_id, task_key, seq, payload, max_attempts, created_at, fingerprint)
      SELECT (SELECT id FROM batches WHERE name = 'b'), 'k' || i, i,
        json_object('version', 1, 'path', '/data/k' || i, 'rel', 'k' || i), 3, 1700000000000, '1:1'
      FROM n`).run(n);
    // A task inserted by hand is not counted by the store's triggers (its enqueue counts what it
    // inserts; migration 019): count them as the enqueue would, all PENDING.
    db.exec(`DELETE FROM task_counts; INSERT INTO task_counts SELECT batch_id, stage, 'PENDING', count(*) FROM tasks GROUP BY 1, 2`);
  } finally {
    db.close();
  }
  return dir;
}

/** The command's peak resident memory in KiB (reported by the process itself as it exits) and its output. */
async function peak(dir: string, args: string[]): Promise<{ kib: number; code: number | null; stdout: string; stderr: string }> {
  const report = join(dir, `maxrss-${args[0]}`);
  const r = await runCli(args, { cwd: dir, env: { NODE_OPTIONS: `--require ${preload}`, MAXRSS_FILE: report }, timeoutMs: 60_000 });
  return { kib: Number(readFileSync(report, 'utf8')), ...r };
}

/**
 * By design a command holds one page (500 tasks, well under 1 MB here) and its output
 * stream's buffer; SQLite's page cache (at most 16 MB) fills as the batch is read, and the
 * collector lets the heap grow some with the work done (measured: 0–10 MB more for the big
 * store, and 7 MB more again at 400,000 tasks). Reading the batch whole cost 45–124 MB more
 * for the SMALL tasks the big store has in addition; 20 MB is below that, above the design's.
 */
const GROWTH_KIB = 20 * 1024;

/**
 * A read-only command's peaks on both stores: the higher of two runs on the small one and the
 * lower of two on the big one (whose output is returned). A run's peak moves by up to 15 MB with
 * when the collector happens to run (97–113 MB for one `logs --batch` here); a batch read whole
 * costs more than that every time.
 */
async function peaks(args: string[]): Promise<{ one: Awaited<ReturnType<typeof peak>>; two: Awaited<ReturnType<typeof peak>> }> {
  const ones = [await peak(small, args), await peak(small, args)];
  const twos = [await peak(big, args), await peak(big, args)];
  return { one: ones.reduce((a, b) => (b.kib > a.kib ? b : a)), two: twos.reduce((a, b) => (b.kib < a.kib ? b : a)) };
}

describe('commands over a whole batch need the same memory for twice the tasks', () => {
  beforeAll(async () => {
    const dir = tempDir('sd-bigmem-preload-');
    dirs.push(dir);
    preload = join(dir, 'maxrss.cjs');
    writeFileSync(preload, "process.on('exit', () => require('node:fs').writeFileSync(process.env.MAXRSS_FILE, String(process.resourceUsage().maxRSS)));\n");
    [small, big] = await Promise.all([storeWith(SMALL), storeWith(2 * SMALL)]);
  }, 60_000);
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('tasks --json prints valid JSON with every task, in creation order', async () => {
    const { one, two } = await peaks(['tasks', '--json', '--batch', 'b']);
    for (const [r, n] of [[one, SMALL], [two, 2 * SMALL]] as const) {
      expect(r.code, r.stderr).toBe(0);
      const tasks = JSON.parse(r.stdout) as { key: string; status: string }[];
      expect(tasks).toHaveLength(n);
      expect(tasks[0]).toMatchObject({ key: 'k0', status: 'PENDING', attempts: 0, lastError: null });
      expect(tasks.at(-1)!.key).toBe(`k${n - 1}`);
      expect(r.stdout.endsWith(']\n')).toBe(true);
    }
    expect(two.kib - one.kib, `peak ${one.kib} KiB for ${SMALL} tasks, ${two.kib} KiB for ${2 * SMALL}`).toBeLessThan(GROWTH_KIB);
  }, 120_000);

  it('tasks (piped) prints a line per task', async () => {
    const { one, two } = await peaks(['tasks', '--batch', 'b']);
    expect(two.code, two.stderr).toBe(0);
    expect(two.stdout.split('\n').filter(Boolean)).toHaveLength(2 * SMALL);
    expect(two.stdout.split('\n')[2 * SMALL - 1]).toBe(`k${2 * SMALL - 1}\tPENDING\t0\t\t`);
    expect(two.kib - one.kib, `peak ${one.kib} KiB for ${SMALL} tasks, ${two.kib} KiB for ${2 * SMALL}`).toBeLessThan(GROWTH_KIB);
  }, 120_000);

  it('logs --batch goes through every task', async () => {
    const { one, two } = await peaks(['logs', '--batch', 'b']);
    expect(two.code, two.stderr).toBe(0);
    expect(two.stderr).toContain(`${2 * SMALL} tasks printed nothing (or never ran)`);
    expect(two.kib - one.kib, `peak ${one.kib} KiB for ${SMALL} tasks, ${two.kib} KiB for ${2 * SMALL}`).toBeLessThan(GROWTH_KIB);
  }, 120_000);

  it('cancel ends every PENDING task', async () => {
    const one = await peak(small, ['cancel', '--batch', 'b', '--json']);
    const two = await peak(big, ['cancel', '--batch', 'b', '--json']);
    expect(two.code, two.stderr).toBe(0);
    expect(JSON.parse(two.stdout)).toEqual({ batch: 'b', cancelled: 2 * SMALL, stopping: 0, dependents: 0 });
    const status = await runCli(['status', '--json', '--batch', 'b'], { cwd: big });
    expect(JSON.parse(status.stdout)).toMatchObject({ total: 2 * SMALL, cancelled: 2 * SMALL });
    expect(two.kib - one.kib, `peak ${one.kib} KiB for ${SMALL} tasks, ${two.kib} KiB for ${2 * SMALL}`).toBeLessThan(GROWTH_KIB);
  }, 60_000);
});
