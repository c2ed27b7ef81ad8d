import type Database from 'better-sqlite3';
import type { EnqueueOptions, EnqueueResult, NewBatch, TaskSpec } from '../records.js';
import { toBatch, type BatchDbRow } from '../shared/db-rows.js';
import { needsColumn } from '../shared/json-columns.js';
import { stagingChunks, type StagedSpec } from '../shared/staging-chunks.js';
import { failpoint } from '../failpoint.js';
import { openSqlite, storeError } from './open-sqlite.js';
import type { TrustedOwners } from './store-owner.js';
import { SQL } from './statements.js';

/**
 * The first staged spec of each key: of a list's repeated items the first is the task, so its
 * payload is the one a run compares and puts in. (A record stored by an older version has no
 * fingerprint: it takes the staged one when its line is the same, else it counts as changed.)
 */
const FIRST_STAGED = `(SELECT staging.* FROM temp.staging JOIN (SELECT min(rowid) AS first FROM temp.staging GROUP BY stage, task_key) AS f ON staging.rowid = f.first)`;

/** @batchId — the waiting tasks' claim ranks as `staged` (alias `s`) gives them; only rows whose rank changed. */
function reorderFrom(staged: string): string {
  return `
    UPDATE tasks SET priority = s.priority, order_rank = s.order_rank
    FROM ${staged} AS s
    WHERE tasks.batch_id = @batchId AND tasks.stage = s.stage AND tasks.task_key = s.task_key
      AND tasks.status = 'PENDING' AND (tasks.priority <> s.priority OR tasks.order_rank <> s.order_rank)`;
}

/**
 * @batchId — the rate keys (--rate-key) `staged` (alias `s`) renders, on every task whatever its
 * status (a failed one runs again under retry-failed), but only where the task runs what was
 * staged: a record the list changed without --rerun-changed keeps the key of the one it runs.
 */
function rekeyFrom(staged: string): string {
  return `
    UPDATE tasks SET rate_key = s.rate_key
    FROM ${staged} AS s
    WHERE tasks.batch_id = @batchId AND tasks.stage = s.stage AND tasks.task_key = s.task_key
      AND tasks.rate_key IS NOT s.rate_key AND tasks.fingerprint IS s.fingerprint`;
}

/** The statements only an enqueue runs (the staging table exists on its connection only). */
const ENQUEUE_SQL = {
  batchByName: SQL.batchByName,
  countChanged: SQL.countChanged,
  /** Staged specs whose (stage, key) came before: a list's repeated items. */
  countRepeated: 'SELECT count(*) - (SELECT count(*) FROM (SELECT DISTINCT stage, task_key FROM temp.staging)) AS n FROM temp.staging',
  /** (?, ?, ?, ?, ?, ?, ?) — one spec into the staging table. */
  stage: 'INSERT INTO temp.staging (task_key, payload, fingerprint, stage, item_key, needs, max_attempts, priority, order_rank, rate_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  /** @name @source @job @now — its id above every batch id the store ever had (id_high_water). */
  insertBatch: `
    INSERT INTO batches (id, name, source, job, created_at, updated_at)
    VALUES (max(coalesce((SELECT max(id) FROM batches), 0), (SELECT batches FROM id_high_water)) + 1, @name, @source, @job, @now, @now)`,
  /** ?batchId */
  maxSeq: 'SELECT coalesce(max(seq), 0) AS base FROM tasks WHERE batch_id = ?',
  /** The largest task id the store ever had: new task ids start above it (id_high_water). */
  taskIdBase: 'SELECT max(coalesce((SELECT max(id) FROM tasks), 0), (SELECT tasks FROM id_high_water)) AS base',
  /**
   * @batchId @base @idBase @maxAttempts @now — copies temp.staging; keys already in the batch
   * are skipped (their ids are left unused).
   */
  insertStaged: `
    INSERT INTO tasks (id, batch_id, task_key, stage, item_key, needs, seq, payload, max_attempts, created_at, fingerprint, seen_fingerprint, priority, order_rank, rate_key)
    SELECT @idBase + rowid, @batchId, task_key, stage, item_key, needs, @base + rowid, payload, coalesce(max_attempts, @maxAttempts), @now,
      fingerprint, fingerprint, priority, order_rank, rate_key
    FROM temp.staging WHERE true
    ON CONFLICT (batch_id, stage, task_key) DO NOTHING`,
  /**
   * @batchId @idBase — counts the tasks insertStaged just inserted (every id above @idBase is
   * one of them) into task_counts, whose triggers count only updates and deletes (migration 019).
   * NOT INDEXED: a range of rowids; by the unique index it read every task of the batch.
   */
  countInserted: `
    INSERT INTO task_counts (batch_id, stage, bucket, n)
    SELECT @batchId, stage, 'PENDING', count(*) FROM tasks NOT INDEXED WHERE id > @idBase AND batch_id = @batchId GROUP BY stage
    ON CONFLICT (batch_id, stage, bucket) DO UPDATE SET n = n + excluded.n`,
  /**
   * @batchId — the claim order of this run (--order, --priority) and its rate keys
   * (--rate-key) for the tasks already stored that wait (those --rerun-changed just put back
   * included): a rerun with another order re-ranks them. Touches only rows where one changed
   * (an order given again changes none).
   */
  reorderStaged: reorderFrom('temp.staging'),
  /** @batchId — rekeyFrom the staged specs (after observeStaged and requeueChanged). */
  rekeyStaged: rekeyFrom('temp.staging'),
  /**
   * @batchId — records what the source shows now; unfinished tasks will run on it, so it
   * becomes their fingerprint too. Touches only rows whose file changed.
   */
  observeStaged: `
    UPDATE tasks
    SET seen_fingerprint = s.fingerprint,
        fingerprint = CASE WHEN tasks.status = 'SUCCESS' THEN tasks.fingerprint ELSE s.fingerprint END
    FROM temp.staging AS s
    WHERE tasks.batch_id = @batchId AND tasks.stage = s.stage AND tasks.task_key = s.task_key
      AND tasks.seen_fingerprint IS NOT s.fingerprint`,
  /** @batchId — --rerun-changed: back to PENDING with a fresh budget, to run on the new file. */
  requeueChanged: `
    UPDATE tasks
    SET status = 'PENDING', attempts = 0, earlier_attempts = earlier_attempts + attempts, next_run_at = 0, busy_since = NULL, finished_at = NULL, result = NULL, last_error = NULL,
        fingerprint = seen_fingerprint
    WHERE batch_id = @batchId AND status = 'SUCCESS' AND seen_fingerprint IS NOT fingerprint`,
  /** @batchId — itemPayloads: what the source gives each task now (seen); see FIRST_STAGED and EnqueueOptions. */
  observeItems: `
    UPDATE tasks
    SET seen_fingerprint = s.fingerprint,
        fingerprint = CASE WHEN tasks.fingerprint IS NULL AND tasks.payload -> '$.item' IS s.payload -> '$.item' THEN s.fingerprint ELSE tasks.fingerprint END
    FROM ${FIRST_STAGED} AS s
    WHERE tasks.batch_id = @batchId AND tasks.stage = s.stage AND tasks.task_key = s.task_key
      AND tasks.seen_fingerprint IS NOT s.fingerprint`,
  /**
   * @batchId — itemPayloads with --rerun-changed: the new payload, marked `rerun` (it runs even
   * where its declared output is in place), back to PENDING with a fresh budget. An item with
   * a stage task RUNNING is left whole for the next time, so no stage runs on the new record
   * after one on the old.
   */
  requeueItems: `
    UPDATE tasks
    SET status = 'PENDING', attempts = 0, earlier_attempts = earlier_attempts + attempts, next_run_at = 0, busy_since = NULL, finished_at = NULL, result = NULL, last_error = NULL,
        fingerprint = seen_fingerprint, payload = substr(s.payload, 1, length(s.payload) - 1) || ',"rerun":true}'
    FROM ${FIRST_STAGED} AS s
    WHERE tasks.batch_id = @batchId AND tasks.stage = s.stage AND tasks.task_key = s.task_key
      AND tasks.status <> 'RUNNING' AND tasks.seen_fingerprint IS NOT tasks.fingerprint
      AND NOT (tasks.item_key IS NOT NULL AND EXISTS (
        SELECT 1 FROM tasks AS r WHERE r.batch_id = tasks.batch_id AND r.item_key = tasks.item_key AND r.status = 'RUNNING'))`,
  /** @batchId — reorderStaged for a list: of a key's repeated items, the first (FIRST_STAGED) ranks it, as it is the task. */
  reorderItems: reorderFrom(FIRST_STAGED),
  /** @batchId — rekeyFrom for a list: the first staged spec of each key (after observeItems and requeueItems). */
  rekeyItems: rekeyFrom(FIRST_STAGED),
  /** @batchId — itemPayloads: the items (with stages, not their tasks) whose record the source changed, and the first of them. */
  countChangedItems: `
    SELECT count(DISTINCT coalesce(item_key, task_key)) AS n,
      (SELECT coalesce(item_key, task_key) FROM tasks WHERE batch_id = @batchId AND seen_fingerprint IS NOT fingerprint ORDER BY seq LIMIT 1) AS example
    FROM tasks WHERE batch_id = @batchId AND seen_fingerprint IS NOT fingerprint`,
} as const;

/**
 * Create the batch if needed and insert the keys it lacks, all or nothing. Rows are first
 * staged in a TEMP table, which holds no lock on the store, so a long directory walk never
 * blocks other runs; the store then changes in one short transaction.
 *
 * On a connection of its own, closed at the end: a million staged rows spill to a temporary
 * file (the store's connection keeps its temporary storage in memory, see SqliteStore), and
 * the store's connection never opens a temporary database, which would pin that choice.
 */
export function enqueue(path: string, batch: NewBatch, specs: Iterable<TaskSpec>, options: EnqueueOptions, trust: TrustedOwners): EnqueueResult {
  const rerunChanged = options.rerunChanged ?? false;
  const db = openSqlite(path, { create: false, trust });
  try {
    db.exec(`CREATE TEMP TABLE staging (task_key TEXT NOT NULL, payload TEXT NOT NULL, fingerprint TEXT,
      stage TEXT NOT NULL, item_key TEXT, needs TEXT, max_attempts INTEGER, priority INTEGER NOT NULL, order_rank INTEGER NOT NULL, rate_key TEXT)`);
    const st = Object.fromEntries(Object.entries(ENQUEUE_SQL).map(([name, sql]) => [name, db.prepare(sql)])) as Record<
      keyof typeof ENQUEUE_SQL,
      Database.Statement
    >;
    // A transaction per chunk (stagingChunks: rows and payload bytes bounded), memory bounded by one chunk.
    let staged = 0;
    const flush = db.transaction((rows: StagedSpec[]) => {
      staged += rows.length;
      for (const { spec: s, payload } of rows) {
        const needs = needsColumn(s.needs);
        st.stage.run(s.key, payload, s.fingerprint, s.stage ?? '', s.item ?? null, needs, s.maxAttempts ?? null, s.priority ?? 0, s.rank ?? 0, s.rateKey ?? null);
      }
    });
    for (const chunk of stagingChunks(specs)) flush(chunk);
    const now = Date.now();
    const result = db
      .transaction(() => {
        let row = st.batchByName.get(batch.name) as BatchDbRow | undefined;
        const created = !row;
        if (!row) {
          st.insertBatch.run({ name: batch.name, source: batch.source, job: JSON.stringify(batch.job), now });
          row = st.batchByName.get(batch.name) as BatchDbRow;
        }
        const { base } = st.maxSeq.get(row.id) as { base: number };
        const { base: idBase } = st.taskIdBase.get() as { base: number };
        const inserted = st.insertStaged.run({ batchId: row.id, base, idBase, maxAttempts: batch.maxAttempts, now }).changes;
        if (inserted > 0) st.countInserted.run({ batchId: row.id, idBase });
        if (options.itemPayloads) {
          if (!created) st.observeItems.run({ batchId: row.id });
          const requeued = rerunChanged && !created ? st.requeueItems.run({ batchId: row.id }).changes : 0;
          if (!created) st.reorderItems.run({ batchId: row.id });
          if (!created && options.rekey) st.rekeyItems.run({ batchId: row.id });
          // A batch created here has no record the source changed: every task was just staged.
          const { n: changed, example } = created
            ? { n: 0, example: null }
            : (st.countChangedItems.get({ batchId: row.id }) as { n: number; example: string | null });
          return { batch: toBatch(row), created, inserted, changed, changedExample: example, requeued };
        }
        if (!created) st.observeStaged.run({ batchId: row.id });
        const requeued = rerunChanged ? st.requeueChanged.run({ batchId: row.id }).changes : 0;
        if (!created) st.reorderStaged.run({ batchId: row.id });
        if (!created && options.rekey) st.rekeyStaged.run({ batchId: row.id });
        const { n: changed } = st.countChanged.get({ batchId: row.id }) as { n: number };
        return { batch: toBatch(row), created, inserted, changed, requeued };
      })
      .immediate();
    // Into a new batch, each distinct key was inserted once: the rest repeated one (no DISTINCT
    // over the staged rows, 0.8 s at a million).
    const repeated = !options.countRepeated ? 0 : result.created ? staged - result.inserted : (st.countRepeated.get() as { n: number }).n;
    failpoint('write');
    return { ...result, repeated };
  } catch (err) {
    throw storeError(err, path);
  } finally {
    db.close();
  }
}
