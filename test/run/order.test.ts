import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mainIn, startIn } from '../helpers/in-process-cli.js';
import { waitUntil } from '../helpers/json-views.js';
import { attemptsIn } from '../helpers/read-store.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';

// `--order key|size|history|random` and `--priority 'GLOB=N'` (SPEC §10): which never-tried
// tasks a run starts first. Observed as the order the commands ran in, at -j 1 (one command at
// a time, each claimed in the batch's order).

const newSchema = pgSchemas('sd_order');
const STORES = [{ store: 'SQLite', db: (): string[] => [] }, ...(PG_URL ? [{ store: 'PostgreSQL', db: () => ['--db', newSchema().db] }] : [])];

/** A folder `src` of files with these sizes (bytes), and a command that logs each key as it runs. */
function project(sizes: Record<string, number>) {
  const dir = mkdtempSync(join(tmpdir(), 'sd-order-'));
  mkdirSync(join(dir, 'src'));
  for (const [name, n] of Object.entries(sizes)) writeFileSync(join(dir, 'src', name), 'x'.repeat(n));
  const ran = () => (existsSync(join(dir, 'ran.log')) ? readFileSync(join(dir, 'ran.log'), 'utf8').trim().split('\n') : []);
  return { dir, ran, exec: 'echo {key} >> ran.log' };
}

describe.each(STORES)('claim order on $store', ({ db: dbFor }) => {
  it('--order size runs the biggest input first; --priority puts matching keys ahead of it', async () => {
    const p = project({ 'a.log': 10, 'b.log': 5000, 'c.txt': 1, 'd.log': 300, 'e.txt': 40 });
    const db = dbFor();
    const r = await mainIn(p.dir, ['run', 'src', '--exec', p.exec, '-j', '1', '--order', 'size', ...db]);
    expect(r.code, r.stderr).toBe(0);
    expect(p.ran()).toEqual(['b.log', 'd.log', 'e.txt', 'a.log', 'c.txt']);

    rmSync(join(p.dir, 'ran.log'));
    const again = await mainIn(p.dir, ['run', 'src', '--batch', 'urgent-first', '--exec', p.exec, '-j', '1', '--order', 'size', '--priority', '*.txt=5', '--priority', 'c.txt=1', ...db]);
    expect(again.code, again.stderr).toBe(0);
    expect(p.ran()).toEqual(['e.txt', 'c.txt', 'b.log', 'd.log', 'a.log']);
  });

  it('--order history runs the keys that were slowest in earlier batches of the source first, new ones after them by size', async () => {
    // Each file holds its sleep in seconds; a new, big file has no history yet.
    const p = project({});
    for (const [name, secs] of [['fast', '0'], ['slow', '0.6'], ['mid', '0.3']]) writeFileSync(join(p.dir, 'src', name), secs);
    const db = dbFor();
    const exec = 'sleep "$(cat {})"; echo {key} >> ran.log';
    expect((await mainIn(p.dir, ['run', 'src', '--batch', 'night-1', '--exec', exec, '-j', '3', ...db])).code).toBe(0);
    writeFileSync(join(p.dir, 'src', 'new'), '0            ');
    rmSync(join(p.dir, 'ran.log'));
    const r = await mainIn(p.dir, ['run', 'src', '--batch', 'night-2', '--exec', exec, '-j', '1', '--order', 'history', ...db]);
    expect(r.code, r.stderr).toBe(0);
    expect(p.ran()).toEqual(['slow', 'mid', 'fast', 'new']);
  });
});

describe('claim order: the job file, the stored batch, bad values', () => {
  it('order and priority in splitdance.json, stored with the batch: a later run without them keeps them', async () => {
    const p = project({ a: 1, b: 3, c: 2 });
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: p.exec, order: 'size', priority: ['a=1'], concurrency: 1 }));
    const r = await mainIn(p.dir, ['run']);
    expect(r.code, r.stderr).toBe(0);
    expect(p.ran()).toEqual(['a', 'b', 'c']);
    // With --exec given, splitdance.json is not read: what shows is the batch's stored order.
    const dry = await mainIn(p.dir, ['run', 'src', '--exec', p.exec, '--dry-run', '--json']);
    expect(JSON.parse(dry.stdout)).toMatchObject({ order: 'size', priority: [{ glob: 'a', n: 1 }] });
  });

  it('a bad --order or --priority is exit 2 naming it, and nothing is written', async () => {
    const p = project({ a: 1 });
    const cases: [string[], string][] = [
      [['--order', 'largest'], '--order expects one of key, size, history, random'],
      [['--priority', 'a'], '--priority expects GLOB=N'],
      [['--priority', 'a=high'], '--priority expects GLOB=N'],
    ];
    for (const [args, message] of cases) {
      const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true', ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(message);
    }
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', exec: 'true', order: 'biggest', priority: ['x'] }));
    const job = await mainIn(p.dir, ['run']);
    expect(job.code).toBe(2);
    expect(job.stderr).toMatch(/order/);
    expect(job.stderr).toMatch(/priority/);
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
  });
});

describe.each(STORES)('splitdance set on a running batch on $store', ({ store, db: dbFor }) => {
  it('--order size moves the waiting tasks at once, for the run and a worker beside it; --no-priority drops the priorities', async () => {
    const sizes = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`f${String(i).padStart(2, '0')}`, (i * 37) % 12 + 1]));
    const p = project(sizes);
    const db = dbFor();
    const dbPath = db[1] ?? join(p.dir, '.splitdance', 'splitdance.db');
    const exec = 'sleep 0.3; echo {key} >> ran.log';
    const run = startIn(p.dir, ['run', 'src', '--exec', exec, '-j', '1', '--priority', 'f11=9', ...db]);
    await waitUntil(async () => p.ran().length >= 1, 60_000, 'the first task to end');
    // On PostgreSQL a worker joins: two coordinators claim from the same order.
    const worker = store === 'PostgreSQL' ? startIn(p.dir, ['worker', '-j', '1', ...db]) : null;
    const set = await mainIn(p.dir, ['set', '--order', 'size', '--no-priority', ...db]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stderr).toMatch(/^batch src-[0-9a-f]+: order size; no rate limit; \d+ waiting tasks? moved$/m);
    // Claimed before the set: the attempts that exist now. Every later claim is by size, biggest first.
    const before = new Set((await attemptsIn(dbPath)).map((a) => a.key));
    expect((await run.done).code).toBe(0);
    if (worker) expect((await worker.done).code).toBe(0);
    const after = (await attemptsIn(dbPath)).filter((a) => !before.has(a.key)).sort((a, b) => a.id - b.id).map((a) => a.key);
    expect(after.length).toBeGreaterThan(4);
    expect(after).toEqual([...after].sort((a, b) => sizes[b]! - sizes[a]! || a.localeCompare(b)));
    // Stored for later runs of the batch: its dry run shows the new order and no priority.
    const dry = await mainIn(p.dir, ['run', 'src', '--exec', exec, '--dry-run', '--json', ...db]);
    expect(JSON.parse(dry.stdout)).toMatchObject({ order: 'size', priority: [] });
  });
});

describe('splitdance set: bad input', () => {
  it('no change, a bad value, --shuf with another order, an unknown batch: exit 2 naming it; no store: exit 4', async () => {
    const p = project({ a: 1 });
    expect((await mainIn(p.dir, ['set', '--order', 'size'])).code).toBe(4);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true'])).code).toBe(0);
    for (const [args, message] of [
      [[], 'set changes a running batch: give --order'],
      [['--order', 'big'], '--order expects one of key, size, history, random'],
      [['--priority', 'x'], '--priority expects GLOB=N'],
      [['--shuf', '--order', 'size'], '--shuf is --order random'],
      [['--order', 'size', '--batch', 'nope'], 'nope'],
    ] as const) {
      const r = await mainIn(p.dir, ['set', ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(message);
    }
    // Nothing was written: the batch's order is still key order.
    expect(JSON.parse((await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--dry-run', '--json'])).stdout)).toMatchObject({ order: 'key', priority: [] });
    const ok = await mainIn(p.dir, ['set', '--shuf', '--json']);
    expect(JSON.parse(ok.stdout)).toMatchObject({ order: 'random', priority: [], moved: 0 });
  });
});
