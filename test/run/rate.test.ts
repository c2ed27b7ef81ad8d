import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mainIn, startIn } from '../helpers/in-process-cli.js';
import { waitUntil } from '../helpers/json-views.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { attemptsIn } from '../helpers/read-store.js';
import { projectWithFiles } from '../helpers/project.js';
import { mostIn } from '../helpers/start-windows.js';

// `--rate N/s|N/m|N/h` (SPEC §10): at most N attempt starts per period for the batch, across
// every run and worker on its store. By design (rate.ts) starts are period / N apart, with at
// most a tenth of a second's worth at once: in any window of one period, at most N plus that.

const newSchema = pgSchemas('sd_rate');
const STORES = [{ store: 'SQLite', db: (): string[] => [] }, ...(PG_URL ? [{ store: 'PostgreSQL', db: () => ['--db', newSchema().db] }] : [])];

/** `n` files in `src/`, and the store a run there uses: `--db`'s, else the default. */
function project(n: number) {
  const { dir } = projectWithFiles(n, 'sd-rate-');
  return { dir, dbPath: (db: string[]) => db[1] ?? join(dir, '.splitdance', 'splitdance.db') };
}

describe.each(STORES)('--rate on $store', ({ store, db: dbFor }) => {
  it('20/s over 30 quick tasks on 4 workers (and a worker beside the run on PostgreSQL): at most 21 starts in any second', async () => {
    const p = project(30);
    const db = dbFor();
    const run = startIn(p.dir, ['run', 'src', '--exec', 'true', '-j', '4', '--rate', '20/s', ...db]);
    let worker: ReturnType<typeof startIn> | null = null;
    if (store === 'PostgreSQL') {
      await waitUntil(async () => (await attemptsIn(p.dbPath(db)).catch(() => [])).length > 0, 60_000, 'the first start');
      worker = startIn(p.dir, ['worker', '-j', '4', ...db]);
    }
    expect((await run.done).code).toBe(0);
    if (worker) expect((await worker.done).code).toBe(0);
    const starts = (await attemptsIn(p.dbPath(db))).map((a) => a.startedAt);
    expect(starts).toHaveLength(30);
    // The gate lets 20 a second, and a tenth of a second's worth at once (2 at 50 ms apart):
    // 21 claims in a second. A start is recorded when its command started, its claim plus the
    // hand-out to its worker, which varies by some ms: allowed two more.
    expect(mostIn(starts, 1000)).toBeLessThanOrEqual(23);
    // So 30 claims take at least 28 gaps of 50 ms, however fast the machine; their starts, that
    // less the hand-out jitter allowed above (100 ms).
    expect(Math.max(...starts) - Math.min(...starts)).toBeGreaterThanOrEqual(28 * 50 - 100);
  });
});

describe.each(STORES)('splitdance set -j on $store', ({ db: dbFor }) => {
  it('-j 1 on a run of -j 4: within a second, one attempt at a time; the batch keeps it for its next run', async () => {
    const p = project(24);
    const db = dbFor();
    const run = startIn(p.dir, ['run', 'src', '--exec', 'sleep 0.3', '-j', '4', ...db]);
    await waitUntil(async () => (await attemptsIn(p.dbPath(db)).catch(() => [])).length >= 2, 60_000, 'two starts');
    const set = await mainIn(p.dir, ['set', '-j', '1', '--json', ...db]);
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ concurrency: 1, moved: 0 });
    const setAt = Date.now();
    expect((await run.done).code).toBe(0);
    // Seen within a poll (1 s); what was claimed by then runs as it is, a running and a queued
    // attempt of 0.3 s on each worker. From then on: never two at once.
    const spans = (await attemptsIn(p.dbPath(db))).map((a) => [a.startedAt, a.endedAt!] as const);
    const later = spans.filter(([start]) => start >= setAt + 1000 + 2 * 300);
    expect(later.length).toBeGreaterThan(0);
    for (const [start] of later) expect(spans.filter(([s, e]) => s <= start && e > start).length, `at ${start}`).toBe(1);
    const again = await mainIn(p.dir, ['run', 'src', '--exec', 'sleep 0.3', '-j', '4', ...db]);
    expect(again.stderr).toContain('at most 1 running at once: the batch was given `splitdance set -j 1` (`set -j none` lifts it)');
  });

  it('-j 4 on a run of -j 1: the run starts three more workers and keeps four running; set -j none brings it back to one at a time', async () => {
    const p = project(60);
    const db = dbFor();
    const run = startIn(p.dir, ['run', 'src', '--exec', 'sleep 0.3', '-j', '1', ...db]);
    await waitUntil(async () => (await attemptsIn(p.dbPath(db)).catch(() => [])).length >= 1, 60_000, 'a start');
    const set = await mainIn(p.dir, ['set', '-j', '4', '--json', ...db]);
    expect(JSON.parse(set.stdout)).toMatchObject({ concurrency: 4 });
    // Four at once: seen within a poll (1 s), the new workers loaded (each about 0.2 s).
    await waitUntil(async () => (await attemptsIn(p.dbPath(db))).filter((a) => a.endedAt === null).length >= 4, 30_000, 'four running at once');
    const none = await mainIn(p.dir, ['set', '-j', 'none', ...db]);
    expect(none.code, none.stderr).toBe(0);
    const noneAt = Date.now();
    const r = await run.done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('the batch was given `splitdance set -j 4`: up to 4 running at once here');
    // Back to the run's own -j 1 within a poll, once what was claimed by then has run.
    const spans = (await attemptsIn(p.dbPath(db))).map((a) => [a.startedAt, a.endedAt!] as const);
    const later = spans.filter(([start]) => start >= noneAt + 1000 + 2 * 300);
    expect(later.length).toBeGreaterThan(0);
    for (const [start] of later) expect(spans.filter(([s, e]) => s <= start && e > start).length, `at ${start}`).toBe(1);
  });

  it('-j 3 on a run of -j 1 whose attempt runs long: seen at its next look (a poll), not when the attempt ends', async () => {
    const p = project(3);
    const db = dbFor();
    const run = startIn(p.dir, ['run', 'src', '--exec', 'sleep 8', '-j', '1', ...db]);
    await waitUntil(async () => (await attemptsIn(p.dbPath(db)).catch(() => [])).length >= 1, 60_000, 'a start');
    expect((await mainIn(p.dir, ['set', '-j', '3', ...db])).code).toBe(0);
    expect((await run.done).code).toBe(0);
    // (One claimed queued behind the first on its worker may be given back to an idle one: INTERRUPTED, uncharged.)
    const ran = (await attemptsIn(p.dbPath(db))).filter((a) => a.outcome === 'SUCCESS').sort((a, b) => a.startedAt - b.startedAt);
    const [first, ...others] = ran;
    expect(others).toHaveLength(2);
    // Both started while the first still ran: a look at the batch each poll, not only at an end.
    for (const a of others) expect(a.startedAt).toBeLessThan(first!.endedAt!);
  }, 60_000);
});

describe('--rate: set while it runs, and bad values', () => {
  it('set --rate takes hold within a second: 5/s, then none', async () => {
    const p = project(24);
    const run = startIn(p.dir, ['run', 'src', '--exec', 'true', '-j', '2', '--rate', '5/s']);
    await waitUntil(async () => (await attemptsIn(p.dbPath([])).catch(() => [])).length >= 3, 60_000, 'three starts');
    const set = await mainIn(p.dir, ['set', '--rate', 'none']);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stderr).toMatch(/: order key; no rate limit; 0 waiting tasks moved$/m);
    const setAt = Date.now();
    expect((await run.done).code).toBe(0);
    // At 5/s the 21 or so left would take 4 s more; without the limit, they are done within the second the change takes, and their run time.
    const last = Math.max(...(await attemptsIn(p.dbPath([]))).map((a) => a.startedAt));
    expect(last - setAt).toBeLessThan(3000);
    const dry = await mainIn(p.dir, ['set', '--rate', '2/m', '--json']);
    expect(JSON.parse(dry.stdout)).toMatchObject({ rate: '2/m', moved: 0 });
  });

  it('a bad --rate is exit 2 naming it, nothing written', async () => {
    const p = project(1);
    for (const bad of ['20', '0/s', '20/d', 'fast']) {
      const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--rate', bad]);
      expect(r.code, bad).toBe(2);
      expect(r.stderr).toContain(`--rate expects starts per period, N/s, N/m or N/h with N above 0 (at most 1000000), e.g. 20/s; got "${bad}"`);
    }
  });
});
