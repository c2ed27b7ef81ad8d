import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mainIn, startIn } from '../helpers/in-process-cli.js';
import { waitUntil } from '../helpers/json-views.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { attemptsIn, tasksIn } from '../helpers/read-store.js';
import { mostIn } from '../helpers/start-windows.js';

// `--rate N/s --rate-key TEMPLATE` (SPEC §10): the rate applies per rendered key, on every run
// and worker of the store. By design (rate.ts, the store's key gates) starts of one key are
// period / N apart, with at most a tenth of a second's worth at once; keys do not wait for
// each other.

const newSchema = pgSchemas('sd_ratekey');
const STORES = [{ store: 'SQLite', db: (): string[] => [] }, ...(PG_URL ? [{ store: 'PostgreSQL', db: () => ['--db', newSchema().db] }] : [])];

/** A folder with `list.txt`: `per` items for each of `hosts`, as `HOST N` lines, interleaved by number. */
function project(hosts: string[], per: number, lines?: string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'sd-ratekey-'));
  const items = lines ?? Array.from({ length: per }, (_, i) => hosts.map((h) => `${h} ${i + 1}`)).flat();
  writeFileSync(join(dir, 'list.txt'), `${items.join('\n')}\n`);
  return { dir, dbPath: (db: string[]) => db[1] ?? join(dir, '.splitdance', 'splitdance.db') };
}

/** Each attempt's start, by the host its item names (`HOST N`). */
async function startsByHost(db: string): Promise<Map<string, number[]>> {
  const by = new Map<string, number[]>();
  for (const a of await attemptsIn(db)) {
    const host = a.key.split(' ')[0]!;
    by.set(host, [...(by.get(host) ?? []), a.startedAt]);
  }
  return by;
}

describe.each(STORES)('--rate-key on $store', ({ store, db: dbFor }) => {
  it('5/s per {1} over three hosts on 4 workers (and a worker beside the run on PostgreSQL): each host at most 6 starts in any second, 8 taking at least 7 gaps, the batch more', async () => {
    const p = project(['a', 'b', 'c'], 8);
    const db = dbFor();
    const run = startIn(p.dir, ['run', '--items', 'list.txt', '--exec', 'true', '-j', '4', '--rate', '5/s', '--rate-key', '{1}', ...db]);
    let worker: ReturnType<typeof startIn> | null = null;
    if (store === 'PostgreSQL') {
      await waitUntil(async () => (await attemptsIn(p.dbPath(db)).catch(() => [])).length > 0, 60_000, 'the first start');
      worker = startIn(p.dir, ['worker', '-j', '4', ...db]);
    }
    const done = await run.done;
    expect(done.code, done.stderr).toBe(0);
    if (worker) expect((await worker.done).code).toBe(0);
    const by = await startsByHost(p.dbPath(db));
    expect([...by.keys()].sort()).toEqual(['a', 'b', 'c']);
    // Per key, not per batch: the three keys' gates open together, so some second holds more
    // starts than one gate lets through (a batch-wide 5/s: 6 at most).
    expect(mostIn([...by.values()].flat(), 1000)).toBeGreaterThanOrEqual(7);
    for (const [host, starts] of by) {
      expect(starts, host).toHaveLength(8);
      // A key's gate lets 5 a second, one at a time (200 ms apart): 5 claims in any second; a
      // start is its claim plus the hand-out to its worker, which varies by some ms: one more.
      expect(mostIn(starts, 1000), host).toBeLessThanOrEqual(6);
      // 8 claims take 7 gaps of 200 ms, however fast the machine; starts that less the jitter.
      expect(Math.max(...starts) - Math.min(...starts), host).toBeGreaterThanOrEqual(7 * 200 - 100);
    }
  });
});

describe('--rate-key: keys do not wait for each other', () => {
  it('1/m per {1}: one start per host at once, the rest of each host waiting its minute (a batch-wide 1/m would start one in all)', async () => {
    const p = project(['a', 'b', 'c'], 2);
    const run = startIn(p.dir, ['run', '--items', 'list.txt', '--exec', 'true', '-j', '3', '--rate', '1/m', '--rate-key', '{1}', '--max-runtime', '4s']);
    const db = p.dbPath([]);
    await waitUntil(async () => (await attemptsIn(db).catch(() => [])).length >= 3, 60_000, 'a start for each host');
    const done = await run.done;
    const attempts = await attemptsIn(db);
    // Three keys, three starts, one each; the second of each waits for its key's minute.
    expect(attempts.map((a) => a.key.split(' ')[0]).sort()).toEqual(['a', 'b', 'c']);
    expect((await tasksIn(db)).filter((t) => t.status === 'PENDING').map((t) => t.key).sort()).toEqual(['a 2', 'b 2', 'c 2']);
    expect(done.code).not.toBe(0);
  });

  it('a record without the field: the run says how many share one key, and runs them', async () => {
    const p = project([], 0, ['{"id":1,"host":"x"}', '{"id":2}', '{"id":3}', '{"id":4,"host":"y"}']);
    const r = await mainIn(p.dir, ['run', '--items', 'list.txt', '--jsonl', '--key-field', 'id', '--exec', 'true', '--rate', '50/s', '--rate-key', '{item.host}']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('--rate-key: 2 tasks without its value (e.g. 2) share the empty key');
    const note = r.stderr.split('\n').find((l) => l.startsWith('--rate-key'))!;
    expect(note.length).toBeLessThanOrEqual(80);
    expect((await tasksIn(p.dbPath([]))).every((t) => t.status === 'SUCCESS')).toBe(true);
  });
});

describe('--rate-key after set --rate none', () => {
  it('the stored key limits nothing and is no error: a later run and retry-failed --run go on; a rerun giving --rate-key without a rate is refused', async () => {
    const p = project(['a', 'b'], 2);
    const first = await mainIn(p.dir, ['run', '--items', 'list.txt', '--exec', 'test {2} != 2', '--retries', '0', '--rate', '50/s', '--rate-key', '{1}']);
    expect(first.code).toBe(1);
    expect((await mainIn(p.dir, ['set', '--rate', 'none'])).code).toBe(0);
    const retried = await mainIn(p.dir, ['retry-failed', '--run']);
    expect(retried.code, retried.stderr).toBe(1);
    expect(retried.stderr).not.toContain('--rate-key applies');
    const again = await mainIn(p.dir, ['run', '--items', 'list.txt', '--exec', 'test {2} != 2', '--retries', '0', '--rate-key', '{1}']);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("--rate-key applies the batch's --rate per key, and the batch has no rate");
  });
});

describe('--rate-key refusals: exit 2, nothing stored', () => {
  const cases: [string, string[], RegExp][] = [
    ['without --rate', ['--rate-key', '{1}'], /--rate-key applies the batch's --rate per key, and the batch has no rate: add --rate N\/s, e.g. --rate 5\/s --rate-key '\{1\}'/],
    ['{#}', ['--rate', '5/s', '--rate-key', 'k{#}'], /\{#\} is the task number, given as the task is stored \(a key per task limits nothing/],
    ['{%}', ['--rate', '5/s', '--rate-key', '{%}'], /\{%\} is the slot an attempt runs in/],
    ['{attempt}', ['--rate', '5/s', '--rate-key', '{1}-{attempt}'], /\{attempt\} is the attempt number, which changes with every retry/],
    ['an unknown placeholder', ['--rate', '5/s', '--rate-key', '{hots}'], /--rate-key "\{hots\}": \{hots\}/],
    ['empty', ['--rate', '5/s', '--rate-key', ' '], /--rate-key needs a template/],
  ];
  it.each(cases)('%s', async (_, flags, message) => {
    const p = project(['a'], 2);
    const r = await mainIn(p.dir, ['run', '--items', 'list.txt', '--exec', 'true', ...flags]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(existsSync(p.dbPath([]))).toBe(false);
  });

  it("an item's placeholder on a folder source", async () => {
    const p = project(['a'], 1);
    const r = await mainIn(p.dir, ['run', '.', '--exec', 'true', '--rate', '5/s', '--rate-key', '{item.host}']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--rate-key: {item.host} is a placeholder of an item, and this source is not a list');
  });
});
