// The lock timeout is read when the store module loads, so set it before importing the store.
process.env.SPLITDANCE_BUSY_TIMEOUT_MS = '1000';

import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../../src/store/postgres/pg-store.js';
import type { ClaimedTask } from '../../src/store/task-store.js';
import { PG_URL } from '../helpers/pg.js';
import { startProxy } from '../helpers/tcp-proxy.js';
import { describeTaskStore, ending, keys, newBatch, spec } from './contract.js';
import { prepareStatements } from '../../src/store/postgres/statements.js';

const { PostgresStore: Store } = await import('../../src/store/postgres/pg-store.js');

/**
 * The PostgreSQL store on a real server (`source .ci/start-postgres.sh` starts one and sets
 * SPLITDANCE_PG_URL). Every test gets its own fresh schema, dropped afterwards.
 */

const freshSchema = () => `sd_test_${randomBytes(6).toString('hex')}`;

/** Runs `fn` on a plain connection of its own, the way a DBA with psql would look. */
async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const dropSchema = (schema: string) => admin((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));

/** Every row of every table in the schema, as text: equal snapshots mean nothing changed. */
async function snapshot(schema: string): Promise<string> {
  return admin(async (c) => {
    const tables = await c.query<{ name: string }>(
      "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1",
      [schema],
    );
    const out = [JSON.stringify(tables.rows)];
    for (const { name } of tables.rows) {
      const rows = await c.query(`SELECT t::text AS r FROM "${schema}"."${name}" t ORDER BY 1`);
      out.push(name, ...rows.rows.map((r) => r.r as string));
    }
    return out.join('\n');
  });
}

async function openError(url: string, options: { create: boolean; schema?: string; readonly?: boolean }): Promise<Error> {
  try {
    const s = await Store.open(url, options);
    await s.close();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected PostgresStore.open to fail');
}

/** Back to schema 16, the tasks as they are: what a version before the kept counts left. */
const toSchema16 = (schema: string) =>
  admin((c) =>
    c.query(`DROP TABLE "${schema}".task_counts; DROP FUNCTION "${schema}".count_tasks, "${schema}".drop_batch_counts CASCADE;
      DELETE FROM "${schema}".splitdance_migrations WHERE version > 16`),
  );

/**
 * Expects task_counts (migration 017) to equal a count of the tasks themselves: the groups
 * with a count, every session's shard summed, as `batch stage bucket n`.
 */
async function expectCountsKept(schema: string): Promise<void> {
  const lines = (rows: { b: string; s: string; k: string; n: string }[]) => rows.map((r) => `${r.b} ${r.s} ${r.k} ${r.n}`);
  const { kept, scanned } = await admin(async (c) => ({
    kept: lines(
      (await c.query(`SELECT batch_id AS b, stage AS s, bucket AS k, sum(n) AS n FROM "${schema}".task_counts GROUP BY 1, 2, 3 HAVING sum(n) <> 0 ORDER BY 1, 2, 3`)).rows,
    ),
    scanned: lines(
      (
        await c.query(`
          SELECT batch_id AS b, stage AS s,
            CASE status WHEN 'PENDING' THEN CASE WHEN attempts > 0 THEN 'RETRYING' ELSE 'PENDING' END
              WHEN 'RUNNING' THEN CASE WHEN queued THEN 'QUEUED' ELSE 'RUNNING' END ELSE status END AS k,
            count(*) AS n
          FROM "${schema}".tasks GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`)
      ).rows,
    ),
  }));
  expect(kept).toEqual(scanned);
}

describe.skipIf(!PG_URL)('PostgreSQL store', () => {
  // Every part of the contract ends by checking that the kept counts are the tasks' own.
  describeTaskStore('postgres', async () => {
    const schema = freshSchema();
    const store = await Store.open(PG_URL!, { create: true, schema });
    return {
      store,
      cleanup: async () => {
        await store.close();
        try {
          await expectCountsKept(schema);
        } finally {
          await dropSchema(schema);
        }
      },
    };
  });

  const schemas: string[] = [];
  const stores: PostgresStore[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    for (const s of schemas.splice(0)) await dropSchema(s);
  });

  async function open(schema: string, create = true): Promise<PostgresStore> {
    if (!schemas.includes(schema)) schemas.push(schema);
    const s = await Store.open(PG_URL!, { create, schema });
    stores.push(s);
    return s;
  }

  describe('concurrency', () => {
    it('never lets two stores (two pools) hold the same task, claiming in parallel over many rounds', async () => {
      const schema = freshSchema();
      const stores3 = [await open(schema), await open(schema), await open(schema)];
      const owners = ['A', 'B', 'C'];
      const { batch } = await stores3[0]!.enqueue(newBatch('shared', 3), keys(150).map(spec));
      const t0 = Date.now();
      const held = new Map<number, string>();
      let previous: ClaimedTask[][] = [[], [], []];
      let claims = 0;
      const slots = [1, 2, 3].map((i) => ({ workerId: `w${i}`, pid: i }));
      for (let round = 0; round < 400; round++) {
        const now = t0 + round * 10;
        const request = (owner: string) => ({ batchId: batch.id, owner, host: 'h', now, leaseMs: 60_000, slots });
        const endings = previous.map((ts) =>
          ts.map((t) => (t.id % 4 === 0 ? ending(t, 'FAILED', now, { retryAt: now + 2 }) : ending(t, 'SUCCESS', now))),
        );
        // Every store at once: a coordinator's tick (settle and claim in one transaction, or
        // apart on odd rounds), a heartbeat and a recovery pass that must find nothing stale.
        const ticks = await Promise.all(
          stores3.map(async (s, i) => {
            const owner = owners[i]!;
            const [tick] = await Promise.all([
              round % 2
                ? s.settle(endings[i]!).then(async (applied) => ({ applied, claimed: await s.claim(request(owner)) }))
                : s.settleAndClaim(endings[i]!, request(owner)),
              s.heartbeat(owner, now + 60_000),
              s.releaseStale(batch.id, now, [], owner),
            ]);
            return tick;
          }),
        );
        for (const [i, tick] of ticks.entries()) {
          expect(tick.applied.map((a) => a.token).sort()).toEqual(endings[i]!.map((e) => e.token).sort());
          for (const t of previous[i]!) held.delete(t.id);
        }
        for (const [i, tick] of ticks.entries()) {
          for (const t of tick.claimed) {
            expect(held.get(t.id), `task ${t.key} claimed by ${owners[i]} while held by ${held.get(t.id)}`).toBeUndefined();
            held.set(t.id, owners[i]!);
          }
          claims += tick.claimed.length;
        }
        previous = ticks.map((t) => t.claimed);
        if (previous.every((p) => p.length === 0) && (await stores3[0]!.nextDueAt(batch.id)) === null) break;
      }
      const counts = await stores3[1]!.counts(batch.id);
      expect(counts).toMatchObject({ total: 150, running: 0, pending: 0, retrying: 0 });
      expect(counts.succeeded + counts.failed).toBe(150);
      expect(claims).toBeGreaterThan(150);
      const open_ = await admin((db) => db.query(`SELECT count(*)::int AS n FROM "${schema}".attempts WHERE ended_at IS NULL`));
      expect(open_.rows[0].n).toBe(0);
      const attempts = await admin((db) => db.query(`SELECT count(*)::int AS n FROM "${schema}".attempts`));
      expect(attempts.rows[0].n).toBe(claims);
    });

    it('--rate-key: three stores claiming keyed at the same moment, round after round, start each key at most once per its spacing', async () => {
      const schema = freshSchema();
      const stores3 = [await open(schema), await open(schema), await open(schema)];
      // 4 keys, 12 tasks each, keys interleaved in claim order.
      const specs = keys(48).map((k, i) => ({ ...spec(k), rateKey: `key${i % 4}` }));
      const { batch } = await stores3[0]!.enqueue(newBatch('keyed', 3), specs);
      // Ahead of the clock, so each claim judges the gates at the round's time (a keyed claim
      // takes the store's clock instead when it is later: the test below).
      const t0 = Date.now() + 3_600_000;
      const slots = [1, 2, 3].map((i) => ({ workerId: `w${i}`, pid: i }));
      const startsOf = new Map<string, number[]>();
      // A gate opens every 100 ms; rounds 25 ms apart, every store claiming in each.
      for (let round = 0; round < 60; round++) {
        const now = t0 + round * 25;
        const claimed = await Promise.all(
          stores3.map((s, i) => s.claim({ batchId: batch.id, owner: `o${i}`, host: 'h', now, leaseMs: 60_000, slots, keyed: { spacingMs: 100, burst: 1 } })),
        );
        for (const t of claimed.flat()) {
          const key = `key${Number(t.key.slice(1)) % 4}`;
          startsOf.set(key, [...(startsOf.get(key) ?? []), now]);
        }
      }
      expect([...startsOf.keys()].sort()).toEqual(['key0', 'key1', 'key2', 'key3']);
      for (const [key, starts] of startsOf) {
        // One start per 100 ms for each key, whichever store claimed it: 15 rounds' worth.
        for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!, `${key}: ${starts.join(', ')}`).toBeGreaterThanOrEqual(100);
        expect(starts.length, key).toBe(12);
      }
    });

    it('--rate-key: a keyed claim that waited for the gate row judges the gates at the time it got it, not at its request', async () => {
      const schema = freshSchema();
      const [a, b] = [await open(schema), await open(schema)];
      const { batch } = await a.enqueue(newBatch('keyed-wait', 3), keys(2).map((k) => ({ ...spec(k), rateKey: 'K' })));
      const slot = [{ workerId: 'w1', pid: 1 }];
      const keyed = { spacingMs: 500, burst: 1 };
      await admin(async (c) => {
        await c.query(`INSERT INTO "${schema}".rate_gates (batch_id, next_at) VALUES ($1, 0)`, [batch.id]);
        await c.query('BEGIN');
        await c.query(`SELECT 1 FROM "${schema}".rate_gates WHERE batch_id = $1 FOR UPDATE`, [batch.id]);
        // A asks at t0 and waits for the row longer than K's spacing (within the file's 1 s lock timeout).
        const t0 = Date.now();
        const waiting = a.claim({ batchId: batch.id, owner: 'A', host: 'h', now: t0, leaseMs: 60_000, slots: slot, keyed });
        await new Promise((r) => setTimeout(r, 700));
        await c.query('COMMIT');
        expect(await waiting).toHaveLength(1);
      });
      // B, asking now: A's start was at least 700 ms after t0, so K's gate is closed for 500 ms
      // from then (judged at t0, it would have opened at t0 + 500 ms, already past).
      expect(await b.claim({ batchId: batch.id, owner: 'B', host: 'h', now: Date.now(), leaseMs: 60_000, slots: slot, keyed })).toEqual([]);
    });

    it('a batch hook: six stores taking it at the same moment, round after round, one start each time', async () => {
      const schema = freshSchema();
      const six = await Promise.all(Array.from({ length: 6 }, () => open(schema)));
      const { batch } = await six[0]!.enqueue(newBatch('hooked', 1), keys(1).map(spec));
      for (let end = 1; end <= 10; end++) {
        const now = Date.now();
        const takes = await Promise.all(
          six.map((s, i) => s.takeHook({ batchId: batch.id, hook: 'complete', endMark: `end-${end}`, command: 'x', owner: `o${i}`, now, leaseMs: 30_000 }, { dead: () => false, liveHere: () => false })),
        );
        expect(takes.filter((t) => t.taken)).toHaveLength(1);
        expect(new Set(takes.map((t) => t.record.id)).size).toBe(1);
      }
      expect(new Set((await six[0]!.hooksOf(batch.id)).map((r) => r.id)).size).toBe(10);
    });

    it('migrates once when several coordinators open a new schema at the same moment', async () => {
      const schema = freshSchema();
      schemas.push(schema);
      const opened = await Promise.all(Array.from({ length: 6 }, () => Store.open(PG_URL!, { create: true, schema })));
      stores.push(...opened);
      const versions = await admin((c) => c.query(`SELECT version FROM "${schema}".splitdance_migrations ORDER BY version`));
      // Each migration once (the numbers of the migration files, which may have gaps).
      const known = readdirSync(new URL('../../src/store/postgres/migrations/', import.meta.url)).filter((f) => /^\d+_.*\.sql$/.test(f)).map((f) => parseInt(f, 10));
      expect(versions.rows.map((r) => r.version)).toEqual(known.sort((a, b) => a - b));
      const results = await Promise.all(opened.map((s, i) => s.enqueue(newBatch('same'), keys(20 + i).map(spec))));
      expect(results.filter((r) => r.created)).toHaveLength(1);
      const batch = results[0]!.batch;
      expect((await opened[0]!.counts(batch.id)).total).toBe(25);
      const seqs = await admin((c) => c.query(`SELECT seq FROM "${schema}".tasks GROUP BY seq HAVING count(*) > 1`));
      expect(seqs.rows).toEqual([]);
    });
  });

  describe('a big tick', () => {
    it('answers in bytes proportional to what it settled and claimed: the settled tokens come back once, not once per claimed task', async () => {
      // Many slots, or fast groups, settle and claim a thousand tasks a tick and more. Sent on
      // every claimed row, the tokens made 1,500 × 1,500 array elements twice here; parsing
      // such ticks stalled a grouped run's coordinator past the connection's timeout (exit 4).
      const proxy = await startProxy(new URL(PG_URL!));
      try {
        const url = new URL(PG_URL!);
        url.port = String(proxy.port);
        const schema = freshSchema();
        schemas.push(schema);
        const s = await Store.open(url.href, { create: true, schema });
        const n = 1500;
        const { batch } = await s.enqueue(newBatch('big-tick'), keys(2 * n).map(spec));
        const now = Date.now();
        const slots = Array.from({ length: n }, (_, i) => ({ workerId: `w${i % 2}`, pid: i }));
        const request = { batchId: batch.id, owner: 'o', host: 'h', now, leaseMs: 60_000, slots };
        const first = await s.claim(request);
        expect(first).toHaveLength(n);
        const before = proxy.fromServer();
        const tick = await s.settleAndClaim(first.map((t) => ending(t, 'SUCCESS', now + 1)), { ...request, now: now + 1 });
        const bytes = proxy.fromServer() - before;
        expect(tick.applied).toHaveLength(n);
        expect(tick.applied.every((a) => a.status === 'SUCCESS')).toBe(true);
        expect(tick.claimed).toHaveLength(n);
        // Each claimed row is a few hundred bytes; the tokens once, about 20 bytes each.
        expect(bytes, `${bytes} bytes for ${n} settled and ${n} claimed`).toBeLessThan(n * 1000);
        expect(await s.counts(batch.id)).toMatchObject({ succeeded: n, running: n, pending: 0 });
        await s.close();
      } finally {
        proxy.close();
      }
    });
  });

  describe('open', () => {
    it('keeps the store in the schema of ?schema= and never shows the password', async () => {
      const schema = freshSchema();
      schemas.push(schema);
      const url = new URL(PG_URL!);
      url.searchParams.set('schema', schema);
      const s = await Store.open(url.toString(), { create: true });
      stores.push(s);
      await s.enqueue(newBatch(), keys(2).map(spec));
      const found = await admin((c) => c.query(`SELECT count(*)::int AS n FROM "${schema}".tasks`));
      expect(found.rows[0].n).toBe(2);
      if (url.password) expect(s.location).not.toContain(`:${url.password}@`);
      expect(s.location).toContain(url.host);
    });

    it('keeps its identity across close and reopen, and gives a store made before identities one on upgrade', async () => {
      const schema = freshSchema();
      const first = await open(schema);
      const identity = first.identity;
      expect((await open(schema, false)).identity).toBe(identity);
      // Back to schema version 2 (before identities), as an older splitdance left it.
      await admin(async (c) => {
        await c.query(`DROP TABLE "${schema}".store_identity`);
        await c.query(`DELETE FROM "${schema}".splitdance_migrations WHERE version > 2`);
      });
      const upgraded = await open(schema, false);
      expect(upgraded.identity).toMatch(/^[0-9a-f]{32}$/);
      expect(upgraded.identity).not.toBe(identity);
      expect((await open(schema, false)).identity).toBe(upgraded.identity);
    });

    it('refuses a store written by a newer schema version and changes nothing', async () => {
      const schema = freshSchema();
      const s = await open(schema);
      const { batch } = await s.enqueue(newBatch(), keys(5).map(spec));
      const now = Date.now();
      const [t] = await s.claim({ batchId: batch.id, owner: 'o', host: 'h', now, leaseMs: 1000, slots: [{ workerId: 'w', pid: 1 }] });
      await s.settle([ending(t!, 'SUCCESS', now + 1)]);
      await admin((c) => c.query(`INSERT INTO "${schema}".splitdance_migrations VALUES (99, '099_future.sql', 0)`));
      const before = await snapshot(schema);
      const err = await openError(PG_URL!, { create: true, schema });
      expect(err.name).toBe('StoreError');
      expect(err.message).toMatch(/newer/);
      expect(await snapshot(schema)).toBe(before);
    });

    it('refuses a schema holding foreign tables and changes nothing', async () => {
      const schema = freshSchema();
      schemas.push(schema);
      await admin((c) => c.query(`CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".users (id int); INSERT INTO "${schema}".users VALUES (1)`));
      const before = await snapshot(schema);
      const err = await openError(PG_URL!, { create: true, schema });
      expect(err.name).toBe('StoreError');
      expect(err.message).toMatch(/not a splitdance store/);
      expect(await snapshot(schema)).toBe(before);
    });

    it('refuses a missing store with create: false and creates nothing', async () => {
      const schema = freshSchema();
      const err = await openError(PG_URL!, { create: false, schema });
      expect(err.name).toBe('StoreError');
      expect(err.message).toMatch(/no splitdance store/);
      const exists = await admin((c) => c.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]));
      expect(exists.rows).toEqual([]);
    });

    it('opens read-only without writing: no schema created, no write accepted', async () => {
      const missing = freshSchema();
      expect((await openError(PG_URL!, { create: true, readonly: true, schema: missing })).message).toMatch(/no splitdance store/);
      const exists = await admin((c) => c.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [missing]));
      expect(exists.rows).toEqual([]);

      const schema = freshSchema();
      const { batch } = await (await open(schema)).enqueue(newBatch(), keys(3).map(spec));
      const before = await snapshot(schema);
      const ro = await Store.open(PG_URL!, { create: false, readonly: true, schema });
      stores.push(ro);
      expect((await ro.counts(batch.id)).pending).toBe(3);
      expect((await ro.listTasks({ batchId: batch.id, limit: 2 })).map((t) => t.key)).toEqual(['k000', 'k001']);
      const claimed = await ro.claim({ batchId: batch.id, owner: 'o', host: 'h', now: Date.now(), leaseMs: 1, slots: [{ workerId: 'w', pid: 1 }] }).then(
        () => new Error('expected the claim to fail'),
        (e: Error) => e,
      );
      expect(claimed.name).toBe('StoreError');
      expect(claimed.message).toMatch(/read-only/);
      expect(await snapshot(schema)).toBe(before);
    });

    it('gives a StoreError naming the server, without the password, for a bad URL', async () => {
      const unreachable = await openError('postgres://someone:s3cret-pw@127.0.0.1:1/nowhere', { create: true, schema: freshSchema() });
      expect(unreachable.name).toBe('StoreError');
      expect(unreachable.message).toMatch(/cannot reach PostgreSQL at 127\.0\.0\.1:1/);
      expect(unreachable.message).toMatch(/--db/);
      for (const bad of ['postgres://someone:s3cret-pw@[::1', 'postgres://someone:s3cret-pw@host:notaport/db', 'mysql://someone:s3cret-pw@host/db']) {
        const err = await openError(bad, { create: true });
        expect(err.name, bad).toBe('StoreError');
        expect(err.message).not.toContain('s3cret-pw');
      }
      const badSchema = await openError(PG_URL!, { create: true, schema: 'Robert"; DROP TABLE x' });
      expect(badSchema.name).toBe('StoreError');

      const wrongPassword = new URL(PG_URL!);
      wrongPassword.password = 's3cret-pw';
      const login = await openError(wrongPassword.toString(), { create: true, schema: freshSchema() });
      expect(login.name).toBe('StoreError');
      expect(login.message).toMatch(/refused the login/);
      expect(login.message).not.toContain('s3cret-pw');

      const noDb = new URL(PG_URL!);
      noDb.pathname = '/splitdance_no_such_db';
      const missing = await openError(noDb.toString(), { create: true, schema: freshSchema() });
      expect(missing.name).toBe('StoreError');
      expect(missing.message).toMatch(/database "splitdance_no_such_db" does not exist/);
    });
  });

  describe('locks', () => {
    it('never makes a claim wait for a locked task, and fails a blocked settle with StoreError after the lock timeout', async () => {
      const schema = freshSchema();
      const s = await open(schema);
      const { batch } = await s.enqueue(newBatch(), keys(3).map(spec));
      const now = Date.now();
      const req = (slots: number) => ({ batchId: batch.id, owner: 'o', host: 'h', now, leaseMs: 60_000, slots: Array.from({ length: slots }, (_, i) => ({ workerId: `w${i}`, pid: i })) });
      const [t] = await s.claim(req(1));
      const foreign = new pg.Client({ connectionString: PG_URL });
      await foreign.connect();
      try {
        // A stuck session (say, psql left open) holds the running task and the next pending one.
        await foreign.query('BEGIN');
        await foreign.query(`SELECT id FROM "${schema}".tasks WHERE task_key IN ('k000', 'k001') FOR UPDATE`);
        // Skipped, not waited for: the rows stay held, so a claim that waited on them would end
        // in an error at the lock timeout (1 s here), not with the free task. No wall-clock
        // bound: on a loaded machine a claim that never waits may still take that long.
        expect((await s.claim(req(3))).map((x) => x.key)).toEqual(['k002']);
        const err = await s.settle([ending(t!, 'SUCCESS', now + 1)]).then(
          () => new Error('expected the settle to fail'),
          (e: Error) => e,
        );
        expect(err.name).toBe('StoreError');
        expect(err.message).toMatch(/locked by another session for 1000 ms/);
        await foreign.query('ROLLBACK');
        expect(await s.settle([ending(t!, 'SUCCESS', now + 2)])).toEqual([{ token: t!.token, status: 'SUCCESS' }]);
        expect((await s.claim(req(3))).map((x) => x.key)).toEqual(['k001']);
      } finally {
        await foreign.end();
      }
    });
    it("never makes a settle wait for another session's settle of the same batch, whatever the two backends' pids", async () => {
      // Each session raises its batch's latest finish in a row of its own. Folded to 64 lanes,
      // as first written, two sessions whose pids were equal mod 64 shared one: a fleet's settles
      // queued on it (docs/postgres-fleet.md). Here a foreign session settles with a pid equal
      // mod 64 to each of the store's, holding its transaction open, while the store settles.
      const schema = freshSchema();
      const s = await open(schema);
      const { batch } = await s.enqueue(newBatch(), keys(8).map(spec));
      const now = Date.now();
      const claimed = await s.claim({ batchId: batch.id, owner: 'o', host: 'h', now, leaseMs: 60_000, slots: Array.from({ length: 8 }, (_, i) => ({ workerId: `w${i}`, pid: i })) });
      expect(claimed).toHaveLength(8);
      // Reads at once use every session of the store's pool (4 at most), each leaving a statement
      // on the schema as its last: so the server names the store's sessions.
      await Promise.all(Array.from({ length: 6 }, () => s.counts(batch.id)));
      const mine = await admin(async (c) =>
        (await c.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND position($1 in query) > 0', [`"${schema}"`])).rows.map((r) => r.pid),
      );
      expect(mine.length).toBeGreaterThan(0);
      expect(mine.length).toBeLessThan(claimed.length);
      const settleText = prepareStatements(schema).settleTasks.text;
      const foreign: pg.Client[] = [];
      try {
        for (const [i, pid] of mine.entries()) {
          // Backends are new processes: their pids come round to every residue mod 64 quickly.
          for (let tries = 0; ; tries++) {
            if (tries > 2000) throw new Error(`no backend pid equal to ${pid} mod 64 after 2000 connections`);
            const c = new pg.Client({ connectionString: PG_URL });
            await c.connect();
            const { rows } = await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
            if (rows[0]!.pid % 64 === pid % 64 && rows[0]!.pid !== pid) {
              foreign.push(c);
              break;
            }
            await c.end();
          }
          const t = claimed[i]!;
          const c = foreign[i]!;
          await c.query('BEGIN');
          const one = (v: unknown) => [v];
          await c.query(settleText, [
            one(t.id), one(t.token), one('SUCCESS'), one(now + 1), one(null), one(null), one(null), one(null),
            one(null), one(null), one(1), one(null), one(null), one(false), one(null),
          ]);
        }
        // Every session of the store's pool has a foreign twin mid-settle; at the store's lock
        // timeout (1 s here) a settle that waited would end in a StoreError.
        const rest = claimed.slice(mine.length);
        expect(await s.settle(rest.map((t) => ending(t, 'SUCCESS', now + 2)))).toEqual(rest.map((t) => ({ token: t.token, status: 'SUCCESS' })));
        for (const c of foreign) await c.query('COMMIT');
      } finally {
        for (const c of foreign) await c.end();
      }
      expect(await s.counts(batch.id)).toMatchObject({ total: 8, succeeded: 8, running: 0 });
    });
  });

  describe('enqueue', () => {
    it('writes no batch and no task when the source throws after several staging chunks', async () => {
      const schema = freshSchema();
      const s = await open(schema);
      function* broken() {
        for (let i = 0; i < 12_000; i++) yield spec(`f${String(i).padStart(6, '0')}`);
        throw new Error('EIO while walking');
      }
      await expect(s.enqueue(newBatch(), broken())).rejects.toThrow('EIO while walking');
      const rows = await admin((c) =>
        c.query(`SELECT (SELECT count(*)::int FROM "${schema}".batches) AS b, (SELECT count(*)::int FROM "${schema}".tasks) AS t`),
      );
      expect(rows.rows[0]).toEqual({ b: 0, t: 0 });
      expect(await s.enqueue(newBatch(), keys(2).map(spec))).toMatchObject({ created: true, inserted: 2 });
    });
  });
});

describe.skipIf(!PG_URL)('PostgreSQL: kept counts', () => {
  it("a prune killed after a chunk of a batch's tasks: its counts are the tasks left, and the batch's delete drops them", async () => {
    const schema = freshSchema();
    const s = await Store.open(PG_URL!, { create: true, schema });
    try {
      const { batch } = await s.enqueue(newBatch(), keys(10).map(spec));
      const now = Date.now();
      const claimed = await s.claim({ batchId: batch.id, owner: 'o', host: 'h', now, leaseMs: 30_000, slots: [{ workerId: 'w', pid: 1 }, { workerId: 'v', pid: 2 }] });
      await s.settle([ending(claimed[0]!, 'SUCCESS', now + 1)]);
      // What a prune's first chunk runs (report-statements.ts pruneTasks), on a session of its own, then nothing.
      await admin((c) => c.query(`DELETE FROM "${schema}".tasks WHERE id BETWEEN $1 AND $2 AND batch_id = $3`, [claimed[0]!.id, claimed[1]!.id + 1, batch.id]));
      expect(await s.counts(batch.id)).toMatchObject({ total: 7, succeeded: 0, running: 0, pending: 7 });
      await expectCountsKept(schema);
      await admin((c) => c.query(`DELETE FROM "${schema}".batches WHERE id = $1`, [batch.id]));
      expect((await admin((c) => c.query(`SELECT count(*)::int AS n FROM "${schema}".task_counts`))).rows).toEqual([{ n: 0 }]);
    } finally {
      await s.close();
      await dropSchema(schema);
    }
  });
});

describe.skipIf(!PG_URL)('PostgreSQL: kept counts on upgrade', () => {
  it('a store from before the kept counts (schema 16) gets them from its tasks when opened', async () => {
    const schema = freshSchema();
    const first = await Store.open(PG_URL!, { create: true, schema });
    let batchId: number;
    try {
      const { batch } = await first.enqueue(newBatch(), keys(9).map(spec));
      batchId = batch.id;
      const now = Date.now();
      const claimed = await first.claim({ batchId, owner: 'o', host: 'h', now, leaseMs: 30_000, slots: [1, 2, 3, 4].map((pid) => ({ workerId: `w${pid}`, pid })) });
      await first.settle([ending(claimed[0]!, 'SUCCESS', now + 1), ending(claimed[1]!, 'FAILED', now + 1, { retryAt: now + 60_000 }), ending(claimed[2]!, 'FAILED', now + 1)]);
    } finally {
      await first.close();
    }
    await toSchema16(schema);
    const again = await Store.open(PG_URL!, { create: false, schema });
    try {
      expect(await again.counts(batchId)).toMatchObject({ total: 9, succeeded: 1, retrying: 1, failed: 1, running: 1, pending: 5 });
      await expectCountsKept(schema);
    } finally {
      await again.close();
      await dropSchema(schema);
    }
  });
});

describe.skipIf(!PG_URL)('PostgreSQL: kept counts across sessions, upgrades and renames', () => {
  it('a write of an older version that commits while the store is upgraded is counted (the upgrade waits for it)', async () => {
    const schema = freshSchema();
    const first = await Store.open(PG_URL!, { create: true, schema });
    const { batch } = await first.enqueue(newBatch(), keys(6).map(spec));
    await first.close();
    await toSchema16(schema);
    const older = new pg.Client({ connectionString: PG_URL });
    await older.connect();
    try {
      // An older version's write, open while the upgrade starts, committed half a second later.
      await older.query('BEGIN');
      await older.query(`UPDATE "${schema}".tasks SET status = 'FAILED' WHERE batch_id = $1 AND task_key IN ('k000', 'k001')`, [batch.id]);
      const opening = Store.open(PG_URL!, { create: false, schema });
      await new Promise((r) => setTimeout(r, 500));
      await older.query('COMMIT');
      const upgraded = await opening;
      try {
        expect(await upgraded.counts(batch.id)).toMatchObject({ total: 6, failed: 2, pending: 4 });
        await expectCountsKept(schema);
      } finally {
        await upgraded.close();
      }
    } finally {
      await older.end();
      await dropSchema(schema);
    }
  });

  it('a store whose schema was renamed counts into its own table; an enqueue folds the rows of ended sessions', async () => {
    const schema = freshSchema();
    const renamed = freshSchema();
    const first = await Store.open(PG_URL!, { create: true, schema });
    const { batch } = await first.enqueue(newBatch(), keys(8).map(spec));
    await first.close();
    await admin((c) => c.query(`ALTER SCHEMA "${schema}" RENAME TO "${renamed}"`));
    try {
      // Two sessions that move tasks and end: each leaves rows of its own shard.
      for (const n of [0, 1]) {
        const s = await Store.open(PG_URL!, { create: false, schema: renamed });
        const now = Date.now();
        const [t] = await s.claim({ batchId: batch.id, owner: `o${n}`, host: 'h', now, leaseMs: 30_000, slots: [{ workerId: 'w', pid: 1 }] });
        await s.settle([ending(t!, 'SUCCESS', now + 1)]);
        await s.close();
      }
      const shards = () => admin(async (c) => (await c.query(`SELECT DISTINCT shard FROM "${renamed}".task_counts WHERE shard <> 0`)).rows.map((r) => r.shard as number));
      const ended = await shards();
      expect(ended.length).toBeGreaterThanOrEqual(1);
      // A closed session's server process leaves pg_stat_activity a moment after the client.
      for (let live = ended; live.length > 0; await new Promise((r) => setTimeout(r, 50))) {
        live = await admin(async (c) => (await c.query('SELECT pid FROM pg_stat_activity WHERE pid = ANY($1)', [ended])).rows);
      }
      const later = await Store.open(PG_URL!, { create: false, schema: renamed });
      try {
        await later.enqueue(newBatch(), keys(9).map(spec));
        expect((await shards()).filter((pid) => ended.includes(pid))).toEqual([]);
        expect(await later.counts(batch.id)).toMatchObject({ total: 9, succeeded: 2, pending: 7 });
        await expectCountsKept(renamed);
      } finally {
        await later.close();
      }
    } finally {
      await dropSchema(renamed);
      await dropSchema(schema);
    }
  });
});

describe.skipIf(!PG_URL)('PostgreSQL: the server clock', () => {
  it("with clock: 'server', caller times are moved onto the server's clock and nextDueAt back", async () => {
    const { PostgresStore } = await import('../../src/store/postgres/pg-store.js');
    const schema = `clock_${process.pid}_${Date.now() % 100000}`;
    const store = await PostgresStore.open(process.env.SPLITDANCE_PG_URL!, { create: true, schema, clock: 'server' });
    try {
      const offset = (store as unknown as { clock: { offset: number } }).clock.offset;
      expect(Math.abs(offset)).toBeLessThan(1000); // one machine: the clocks agree
      const { batch } = await store.enqueue({ name: 'b', source: '/s', job: { version: 1 }, maxAttempts: 3 }, [
        { key: 'a', payload: { version: 1, path: '/s/a', rel: 'a' }, fingerprint: null },
      ]);
      const now = Date.now();
      const [t] = await store.claim({ batchId: batch.id, owner: 'o', host: 'h', now, leaseMs: 1000, slots: [{ workerId: 'w', pid: 1 }] });
      await store.settle([
        { token: t!.token, taskId: t!.id, outcome: 'FAILED', endedAt: now + 1, durationMs: 1, exitCode: 1, signal: null, error: 'x', outputTail: null, logPath: null, retryAt: now + 5000 },
      ]);
      expect(await store.nextDueAt(batch.id)).toBe(now + 5000); // back on the caller's clock
      const stored = await store.getTask(batch.id, 'a');
      expect(stored!.nextRunAt).toBe(now + 5000 + offset); // stored on the server's
    } finally {
      await store.close();
      const pg = (await import('pg')).default;
      const c = new pg.Client({ connectionString: process.env.SPLITDANCE_PG_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await c.end();
    }
  });
});
