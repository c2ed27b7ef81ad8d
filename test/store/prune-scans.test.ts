import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { SQL } from '../../src/store/sqlite/statements.js';
import { tempDir } from '../helpers/cli.js';
import { PG_URL, pgQuery } from '../helpers/pg.js';
import { keys, newBatch, spec } from './contract.js';

// Audit item 9: a prune chunk looked for "the batch's first attempts" (or tasks) from the
// start of the batch every time, walking every row that chunks before it had deleted: a
// prune was quadratic in the batch's size (1M tasks 49 s, 4.5M 1,024 s), and each chunk held
// the write lock for that walk. A chunk now reads a range of task ids by primary key and its
// attempts by index, from where the last one stopped. Checked without a clock: SQLite's plan
// for the chunk statements, and the rows PostgreSQL's statistics say the prune read.

describe('a prune chunk reads its own rows, not the batch', () => {
  it('SQLite: both chunk statements reach the tasks through a rowid range and the attempts through their index, with no scan and no sort', async () => {
    const dir = tempDir('sd-prune-plan-');
    try {
      const path = join(dir, 'splitdance.db');
      await SqliteStore.open(path, { create: true }).close();
      const db = new Database(path, { readonly: true });
      const plan = (sql: string) => {
        const params = Object.fromEntries([...sql.matchAll(/@(\w+)/g)].map((m) => [m[1], 1]));
        return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[]).map((r) => r.detail);
      };
      try {
        for (const sql of [SQL.pruneAttempts, SQL.pruneTasks]) {
          const steps = plan(sql);
          const onTasks = steps.filter((s) => /^(SEARCH|SCAN) (t|tasks)\b/.test(s));
          expect(onTasks, `the plan of ${sql}:\n${steps.join('\n')}`).toEqual([expect.stringMatching(/USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)$/)]);
          for (const s of steps.filter((x) => / attempts\b| a\b/.test(x) && !/^(LIST|SCALAR)/.test(x))) expect(s).toMatch(/^SEARCH .*USING (COVERING )?INDEX attempts_by_task \(task_id=\?\)|USING INTEGER PRIMARY KEY \(rowid=\?\)/);
          expect(steps.filter((s) => /^SCAN\b|TEMP B-TREE/.test(s)), steps.join('\n')).toEqual([]);
        }
      } finally {
        db.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(!PG_URL)('PostgreSQL: pruning 40,000 tasks and 80,000 attempts reads a bounded number of rows per row deleted', async () => {
    const { PostgresStore } = await import('../../src/store/postgres/pg-store.js');
    const schema = `sd_prune_scan_${process.pid}_${Date.now() % 100000}`;
    const TASKS = 40_000;
    try {
      const store = await PostgresStore.open(PG_URL!, { create: true, schema });
      let closed = false;
      try {
        await store.enqueue(newBatch('big', 3), keys(TASKS).map(spec));
        // Setup by SQL: every task finished, with two attempts each (a chunk's range holds more attempts than a chunk).
        await pgQuery(`
          INSERT INTO "${schema}".attempts (task_id, attempt, worker_id, host, owner, started_at, ended_at, outcome, log_path)
          SELECT id, n, 'w1', 'h', 'o', 1, 2, CASE WHEN n = 1 THEN 'FAILED' ELSE 'SUCCESS' END, '/logs/' || id || '-' || n
          FROM "${schema}".tasks CROSS JOIN generate_series(1, 2) AS n`);
        await pgQuery(`UPDATE "${schema}".tasks SET status = 'SUCCESS', attempts = 2, started_at = 1, finished_at = 2`);
        await pgQuery(`UPDATE "${schema}".batches SET updated_at = 2`);
        // As autovacuum would leave them: the setup's updates leave no dead rows for the prune to walk.
        await pgQuery(`VACUUM ANALYZE "${schema}".tasks, "${schema}".attempts`);
        const before = await readsOnceFlushed(schema, { tasks: TASKS, attempts: 2 * TASKS }, 'n_tup_ins');
        const paths: string[] = [];
        const result = await store.pruneFinished(Date.now() + 60_000, (_batch, p) => paths.push(...p));
        expect(result).toMatchObject({ batches: ['big'], tasks: TASKS, attempts: 2 * TASKS });
        expect(new Set(paths).size).toBe(2 * TASKS);
        await store.close(); // its sessions end, and report their statistics
        closed = true;
        const after = await readsOnceFlushed(schema, { tasks: TASKS, attempts: 2 * TASKS }, 'n_tup_del');
        const read = after - before;
        // By design each row is read a few times: the batch's first check and id span (a pass over
        // its tasks each), each chunk's statements (the attempts' index and primary key, the
        // tasks' primary key for each attempt and for the range), the cascade's look for each
        // deleted task's attempts. About 5 reads per row deleted (measured: 4.7); the bound is
        // twice that. The quadratic prune read 66 per row at 60,000 tasks, and more per row the
        // bigger the batch.
        expect(read, `rows read by the prune: ${read}`).toBeLessThan(12 * 3 * TASKS);
        expect(await pgQuery(`SELECT 1 FROM "${schema}".tasks UNION ALL SELECT 1 FROM "${schema}".attempts`)).toEqual([]);
      } finally {
        if (!closed) await store.close();
      }
    } finally {
      await pgQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  }, 120_000);
});

/**
 * The rows read so far from the schema's tables (index entries and sequential reads), once the
 * statistics hold `counter` = `expected` for each table: sessions report them when they end or
 * go idle, so the count is waited for (a bounded time: a session reports within 10 s idle).
 */
async function readsOnceFlushed(schema: string, expected: { tasks: number; attempts: number }, counter: 'n_tup_ins' | 'n_tup_del'): Promise<number> {
  const until = Date.now() + 30_000;
  for (;;) {
    const rows = await pgQuery<{ relname: string; n: string; reads: string }>(
      `SELECT relname, ${counter} AS n, coalesce(seq_tup_read, 0) AS reads FROM pg_stat_user_tables WHERE schemaname = $1 AND relname IN ('tasks', 'attempts')`,
      [schema],
    );
    const [idx] = await pgQuery<{ reads: string }>(
      "SELECT coalesce(sum(idx_tup_read), 0) AS reads FROM pg_stat_user_indexes WHERE schemaname = $1 AND relname IN ('tasks', 'attempts')",
      [schema],
    );
    const n = Object.fromEntries(rows.map((r) => [r.relname, Number(r.n)]));
    if (n.tasks === expected.tasks && n.attempts === expected.attempts) {
      return rows.reduce((sum, r) => sum + Number(r.reads), 0) + Number(idx!.reads);
    }
    if (Date.now() > until) throw new Error(`statistics never showed ${counter} ${JSON.stringify(expected)}: ${JSON.stringify(n)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
