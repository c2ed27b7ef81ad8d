import Database from 'better-sqlite3';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { SQL } from '../../src/store/sqlite/statements.js';
import type { ClaimedTask } from '../../src/store/task-store.js';
import { tempDir } from '../helpers/cli.js';
import { describeTaskStore, ending, keys, newBatch, spec } from './contract.js';

/**
 * Expects task_counts (migration 019) to equal a count of the tasks themselves: the rows with
 * a count, as `batch stage bucket n`. Triggers keep it through updates and deletes, the enqueue
 * through its insert; any other path that moved a task would show here.
 */
function expectCountsKept(path: string): void {
  const db = new Database(path, { readonly: true });
  try {
    const lines = (sql: string) => (db.prepare(sql).all() as { b: number; s: string; k: string; n: number }[]).map((r) => `${r.b} ${r.s} ${r.k} ${r.n}`);
    const kept = lines('SELECT batch_id AS b, stage AS s, bucket AS k, n FROM task_counts WHERE n <> 0 ORDER BY 1, 2, 3');
    const scanned = lines(`
      SELECT batch_id AS b, stage AS s,
        CASE status WHEN 'PENDING' THEN iif(attempts > 0, 'RETRYING', 'PENDING') WHEN 'RUNNING' THEN iif(queued, 'QUEUED', 'RUNNING') ELSE status END AS k,
        count(*) AS n
      FROM tasks GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`);
    expect(kept).toEqual(scanned);
  } finally {
    db.close();
  }
}

// Every part of the contract ends by checking that the kept counts are the tasks' own.
describeTaskStore('sqlite', async () => {
  const dir = tempDir('sd-store-');
  const path = join(dir, '.splitdance', 'splitdance.db');
  const store = SqliteStore.open(path, { create: true });
  return {
    store,
    cleanup: async () => {
      await store.close();
      try {
        expectCountsKept(path);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
});

const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function freshDir(): string {
  const d = tempDir('sd-sqlite-');
  dirs.push(d);
  return d;
}

function open(path: string, create = true): SqliteStore {
  const s = SqliteStore.open(path, { create });
  stores.push(s);
  return s;
}

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
const mode = (path: string) => statSync(path).mode & 0o777;

/** A real store with some history, closed (so the WAL is checkpointed into the file). */
async function realStore(path: string): Promise<void> {
  const s = SqliteStore.open(path, { create: true });
  const { batch } = await s.enqueue(newBatch(), keys(500).map(spec));
  const now = Date.now();
  const claimed = await s.claim({ batchId: batch.id, owner: 'o', host: 'h', now, leaseMs: 1000, slots: [{ workerId: 'w', pid: 1 }] });
  await s.settle(claimed.map((t) => ending(t, 'SUCCESS', now + 1, { result: '"r"' })));
  await s.close();
}

/** Opening `path` must throw a StoreError and leave the file (and its folder) exactly as it was. */
function expectRefused(path: string, message?: RegExp): void {
  const before = sha256(path);
  const listing = readdirSync(join(path, '..')).sort();
  let thrown: unknown;
  try {
    stores.push(SqliteStore.open(path, { create: true }));
  } catch (err) {
    thrown = err;
  }
  expect(thrown, 'open should throw').toBeInstanceOf(Error);
  expect((thrown as Error).name).toBe('StoreError');
  if (message) expect((thrown as Error).message).toMatch(message);
  expect((thrown as Error).message).toContain(path);
  expect(sha256(path)).toBe(before);
  expect(readdirSync(join(path, '..')).sort()).toEqual(listing);
}

describe('SqliteStore file', () => {
  it('creates the store 0600 in folders created 0700, even with umask 022', async () => {
    const root = freshDir();
    const path = join(root, 'a', 'b', 'splitdance.db');
    const old = process.umask(0o022);
    try {
      const s = open(path);
      await s.enqueue(newBatch(), keys(3).map(spec));
      expect(mode(path)).toBe(0o600);
      expect(mode(join(root, 'a'))).toBe(0o700);
      expect(mode(join(root, 'a', 'b'))).toBe(0o700);
      // SQLite gives its side files the database's mode.
      expect(mode(`${path}-wal`)).toBe(0o600);
      expect(mode(`${path}-shm`)).toBe(0o600);
    } finally {
      process.umask(old);
    }
  });

  it('uses WAL and stays intact after a workload', async () => {
    const path = join(freshDir(), 'splitdance.db');
    const s = open(path);
    const { batch } = await s.enqueue(newBatch(), keys(200).map(spec));
    const now = Date.now();
    for (let i = 0; i < 20; i++) {
      const got = await s.claim({ batchId: batch.id, owner: 'o', host: 'h', now: now + i, leaseMs: 1000, slots: [{ workerId: 'w1', pid: 1 }, { workerId: 'w2', pid: 2 }] });
      await s.settle(got.map((t, j) => (j ? ending(t, 'SUCCESS', now + i) : ending(t, 'FAILED', now + i, { retryAt: now + i + 1 }))));
    }
    await s.releaseStale(null, now + 10_000, [], 'self');
    const db = new Database(path, { readonly: true });
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(db.pragma('user_version', { simple: true })).toBeGreaterThanOrEqual(1);
    } finally {
      db.close();
    }
  });

  it('keeps everything across close and reopen', async () => {
    const path = join(freshDir(), 'splitdance.db');
    await realStore(path);
    const s = open(path, false);
    const batch = await s.findBatch('batch');
    expect(batch).toBeDefined();
    expect(await s.counts(batch!.id)).toMatchObject({ total: 500, succeeded: 1, pending: 499 });
  });

  it('keeps its identity across close and reopen', async () => {
    const path = join(freshDir(), 'splitdance.db');
    const first = open(path);
    const identity = first.identity;
    await first.close();
    stores.splice(stores.indexOf(first), 1);
    expect(open(path, false).identity).toBe(identity);
  });

  it('gives a store made before identities (schema 5) one when it is upgraded, and keeps it', async () => {
    const path = join(freshDir(), 'splitdance.db');
    const old = new Database(path);
    const migrations = new URL('../../src/store/sqlite/migrations/', import.meta.url);
    for (const f of readdirSync(migrations).filter((f) => /^00[1-5]_.*\.sql$/.test(f)).sort()) old.exec(readFileSync(new URL(f, migrations), 'utf8'));
    old.pragma('user_version = 5');
    old.close();
    const upgraded = open(path, false);
    expect(upgraded.identity).toMatch(/^[0-9a-f]{32}$/);
    const identity = upgraded.identity;
    await upgraded.close();
    stores.splice(stores.indexOf(upgraded), 1);
    expect(open(path, false).identity).toBe(identity);
  });

  it('creates the target of a dangling symlink given as the store path 0600, even with umask 022', () => {
    const dir = freshDir();
    const target = join(dir, 'real.db');
    symlinkSync(target, join(dir, 'link.db'));
    const old = process.umask(0o022);
    try {
      open(join(dir, 'link.db'));
    } finally {
      process.umask(old);
    }
    expect(mode(target)).toBe(0o600);
  });

  it('refuses a garbage file without changing it', () => {
    const path = join(freshDir(), 'splitdance.db');
    writeFileSync(path, randomBytes(16 * 1024));
    expectRefused(path);
  });

  it('refuses a text file without changing it', () => {
    const path = join(freshDir(), 'splitdance.db');
    writeFileSync(path, 'key,status\nk000,SUCCESS\n'.repeat(500));
    expectRefused(path);
  });

  it('refuses a truncated store without changing it', async () => {
    const path = join(freshDir(), 'splitdance.db');
    await realStore(path);
    truncateSync(path, Math.floor(statSync(path).size / 2));
    expectRefused(path, /corrupt/);
  });

  it('refuses a store cut inside its header page without changing it', async () => {
    const path = join(freshDir(), 'splitdance.db');
    await realStore(path);
    truncateSync(path, 60);
    expectRefused(path);
  });

  it('refuses an SQLite database that is not a splitdance store without changing it', () => {
    const path = join(freshDir(), 'app.db');
    const db = new Database(path);
    db.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada')");
    db.close();
    expectRefused(path, /not a splitdance store/);
  });

  // Suspected bug: checkIdentity only inspects tables when user_version is 0, so a foreign
  // database that uses user_version itself passes, is switched to WAL (its header rewritten),
  // and then fails in prepareStatements with a raw SqliteError ("no such table: batches").
  it('refuses a foreign SQLite database whose user_version happens to be 1 without changing it', () => {
    const path = join(freshDir(), 'app.db');
    const db = new Database(path);
    db.exec('CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)');
    db.pragma('user_version = 1');
    db.close();
    expectRefused(path);
  });

  it('refuses a store written by a newer schema without changing it', async () => {
    const path = join(freshDir(), 'splitdance.db');
    await realStore(path);
    const db = new Database(path);
    db.pragma('user_version = 99');
    db.close();
    expectRefused(path, /newer/);
  });

  it('refuses a missing store with create: false and creates nothing', () => {
    const root = freshDir();
    const path = join(root, 'nested', 'splitdance.db');
    let thrown: unknown;
    try {
      open(path, false);
    } catch (err) {
      thrown = err;
    }
    expect((thrown as Error | undefined)?.name).toBe('StoreError');
    expect(existsSync(path)).toBe(false);
    expect(readdirSync(root)).toEqual([]);
  });

  it('refuses a directory given as the store path', () => {
    const path = join(freshDir(), 'store.db');
    mkdirSync(path);
    expect(() => open(path)).toThrow(expect.objectContaining({ name: 'StoreError' }));
  });
});

describe('SqliteStore enqueue', () => {
  it('leaves the file without a batch or task when the source throws after thousands of specs', async () => {
    const path = join(freshDir(), 'splitdance.db');
    const s = open(path);
    function* broken() {
      // More than one staging chunk (5000) so some rows were staged before the failure.
      for (let i = 0; i < 12_000; i++) yield spec(`f${String(i).padStart(6, '0')}`);
      throw new Error('EIO while walking');
    }
    await expect(s.enqueue(newBatch(), broken())).rejects.toThrow('EIO while walking');
    const db = new Database(path, { readonly: true });
    try {
      expect(db.prepare('SELECT count(*) AS n FROM batches').get()).toEqual({ n: 0 });
      expect(db.prepare('SELECT count(*) AS n FROM tasks').get()).toEqual({ n: 0 });
    } finally {
      db.close();
    }
    expect(await s.listBatches()).toEqual([]);
    const ok = await s.enqueue(newBatch(), keys(2).map(spec));
    expect(ok).toMatchObject({ created: true, inserted: 2 });
  });
});

describe('SqliteStore kept counts', () => {
  it("a prune killed after a chunk of a batch's tasks: its counts are the tasks left, and the batch's delete drops them", async () => {
    const path = join(freshDir(), 'splitdance.db');
    const s = open(path);
    const { batch } = await s.enqueue(newBatch(), keys(10).map(spec));
    const now = Date.now();
    const claimed = await s.claim({ batchId: batch.id, owner: 'o', host: 'h', now, leaseMs: 30_000, slots: [{ workerId: 'w', pid: 1 }, { workerId: 'v', pid: 2 }] });
    await s.settle([ending(claimed[0]!, 'SUCCESS', now + 1)]);
    // What a prune's first chunk runs (statements.ts pruneTasks), then nothing: it was killed.
    const db = new Database(path);
    try {
      db.prepare('DELETE FROM tasks WHERE id BETWEEN ? AND ? AND batch_id = ?').run(claimed[0]!.id, claimed[1]!.id + 1, batch.id);
    } finally {
      db.close();
    }
    expect(await s.counts(batch.id)).toMatchObject({ total: 7, succeeded: 0, running: 0, pending: 7 });
    expectCountsKept(path);
    const raw = new Database(path);
    try {
      raw.prepare('DELETE FROM batches WHERE id = ?').run(batch.id);
      expect(raw.prepare('SELECT count(*) AS n FROM task_counts').get()).toEqual({ n: 0 });
    } finally {
      raw.close();
    }
  });
});

describe('SqliteStore listTasks', () => {
  // Suspected bug (latent: the CLI rejects --limit 0): selectTasks pushes a row before it
  // checks the limit, so limit 0 returns one task (and retryFailed with limit 0 resets one).
  it('returns no task for limit 0', async () => {
    const s = open(join(freshDir(), 'splitdance.db'));
    const { batch } = await s.enqueue(newBatch(), keys(3).map(spec));
    expect(await s.listTasks({ batchId: batch.id, limit: 0 })).toEqual([]);
  });
});

describe('SqliteStore with two connections on one file', () => {
  it('never lets two stores hold the same task, over many interleaved rounds', async () => {
    const path = join(freshDir(), 'splitdance.db');
    const a = open(path);
    const b = open(path);
    const { batch } = await a.enqueue(newBatch('shared', 2), keys(80).map(spec));
    const t0 = Date.now();
    const held = new Map<number, string>();
    let previous: { store: SqliteStore; task: ClaimedTask }[] = [];
    for (let round = 0; round < 400; round++) {
      const now = t0 + round * 10;
      const slots = [{ workerId: 'w1', pid: 1 }, { workerId: 'w2', pid: 2 }];
      const [ga, gb] = await Promise.all([
        a.claim({ batchId: batch.id, owner: 'A', host: 'h', now, leaseMs: 60_000, slots }),
        b.claim({ batchId: batch.id, owner: 'B', host: 'h', now, leaseMs: 60_000, slots }),
      ]);
      for (const t of [...ga, ...gb]) {
        expect(held.has(t.id), `task ${t.key} claimed twice`).toBe(false);
        held.set(t.id, t.key);
      }
      // Settle the previous round's tasks through the other connection half the time.
      for (const [i, p] of previous.entries()) {
        const via = i % 2 ? a : b;
        const s = p.task.id % 4 === 0 ? ending(p.task, 'FAILED', now + 1, { retryAt: now + 2 }) : ending(p.task, 'SUCCESS', now + 1);
        expect((await via.settle([s])).map((x) => x.token)).toEqual([p.task.token]);
        held.delete(p.task.id);
      }
      previous = [...ga.map((task) => ({ store: a, task })), ...gb.map((task) => ({ store: b, task }))];
      if (previous.length === 0 && (await a.nextDueAt(batch.id)) === null) break;
    }
    const c = await b.counts(batch.id);
    expect(c.succeeded + c.failed).toBe(80);
    expect(c.total).toBe(80);
  });
});

describe('SqliteStore statements', () => {
  it('each prepares against the newest schema (they are prepared lazily, so a broken one would show only when used)', async () => {
    const path = join(freshDir(), 's.db');
    await open(path).enqueue(newBatch(), keys(1).map(spec));
    const db = new Database(path, { readonly: true });
    const broken = Object.entries(SQL).flatMap(([name, sql]) => {
      try {
        db.prepare(sql);
        return [];
      } catch (err) {
        return [`${name}: ${(err as Error).message}`];
      }
    });
    db.close();
    expect(broken).toEqual([]);
  });
});

describe('SqliteStore grouped statements', () => {
  it('find every listed row by its id, even under statistics an ANALYZE took on a small store', async () => {
    const path = join(freshDir(), 's.db');
    const s = open(path);
    const { batch } = await s.enqueue(newBatch(), keys(50).map(spec));
    const slots = Array.from({ length: 40 }, (_, i) => ({ workerId: `w${i}`, pid: i }));
    await s.claim({ batchId: batch.id, owner: 'o', host: 'h', now: Date.now(), leaseMs: 1000, slots });
    const db = new Database(path);
    db.exec('ANALYZE'); // statistics that make a table look tiny: the plan must not start from it
    const params: Record<string, unknown> = {
      ...{ list: '[]', owner: 'o', host: 'h', now: 1, expires: 1, batchId: 1, self: 'o', dead: '[]', live: '[]', jobVersion: 1 },
      ...{ n: 2, workers: '[]', queued: '[]', first: 1, from: 1, to: 2, maxAttempts: 3, stage: null },
    };
    const planOf = (sql: string) => {
      const used = Object.fromEntries(Object.entries(params).filter(([k]) => sql.includes(`@${k}`)));
      const stmt = db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
      return (sql.includes('?') ? stmt.all('[]') : stmt.all(used)).map((r) => (r as { detail: string }).detail);
    };
    for (const name of ['claimTasks', 'settleTasks', 'settleAttempts', 'holders', 'cancelPending', 'revive', 'statuses', 'markRunning'] as const) {
      const plan = planOf(SQL[name]);
      expect(plan.filter((d) => /^(SCAN|SEARCH) (tasks|attempts|t)\b/.test(d)), `${name}: ${plan.join(' | ')}`).toEqual([
        expect.stringMatching(/^SEARCH (tasks|attempts|t) USING INTEGER PRIMARY KEY/),
      ]);
    }
    // The claim walks the due tasks in index order; a whole-batch update reads only its id range.
    expect(planOf(SQL.claimTasks)).toContainEqual(expect.stringMatching(/^SEARCH c USING INDEX tasks_by_state/));
    // In the order of the batch (priority, rank, key): each part reads its range in index order,
    // never sorting the range itself, only the few rows the two parts return (one sort each).
    expect(planOf(SQL.claimTasks).filter((d) => d.includes('TEMP B-TREE'))).toEqual(['USE TEMP B-TREE FOR ORDER BY', 'USE TEMP B-TREE FOR ORDER BY']);
    for (const name of ['updateMaxAttempts', 'failExhausted'] as const) {
      expect(planOf(SQL[name]), name).toEqual([expect.stringMatching(/^SEARCH tasks USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)/)]);
    }
    // The recovery poll (every second of a run) reads only the RUNNING tasks.
    expect(planOf(SQL.staleTasks)[0]).toMatch(/^SCAN tasks USING INDEX tasks_running/);
    db.close();
  });

  it('commit large results and groups past the size of one list, every row with its own result', async () => {
    const s = open(join(freshDir(), 's.db'));
    const { batch } = await s.enqueue(newBatch(), keys(120).map(spec));
    const now = Date.now();
    const slots = Array.from({ length: 120 }, (_, i) => ({ workerId: `w${i}`, pid: i }));
    const claimed = await s.claim({ batchId: batch.id, owner: 'o', host: 'h', now, leaseMs: 60_000, slots });
    // 118 results of ~100 KB (over 10 MB together: several groups) and two too large for a group.
    const result = (t: ClaimedTask) => JSON.stringify(`${t.key} "${'q"'.repeat(t.seq === 7 || t.seq === 90 ? 200_000 : 50_000)}`);
    const applied = await s.settle(claimed.map((t) => ending(t, 'SUCCESS', now + t.seq, { result: result(t), outputTail: `tail ${t.key}` })));
    expect(applied).toEqual(claimed.map((t) => ({ token: t.token, status: 'SUCCESS' })));
    for (const t of claimed) {
      const row = await s.getTask(batch.id, t.key);
      expect(row, t.key).toMatchObject({ status: 'SUCCESS', finishedAt: now + t.seq });
      expect(row!.result === result(t), `${t.key}'s result`).toBe(true);
      expect((await s.attemptsOf(t.id))[0]).toMatchObject({ outcome: 'SUCCESS', endedAt: now + t.seq, outputTail: `tail ${t.key}` });
    }
  });
});
