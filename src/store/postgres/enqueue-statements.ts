/** The first staged spec of each key: of a list's repeated items the first is the task (as for the insert). */
const FIRST_STAGED = '(SELECT DISTINCT ON (stage, task_key) stage, task_key, payload, fingerprint, priority, order_rank, rate_key FROM pg_temp.staging ORDER BY stage, task_key, ord)';

/** $1 batchId — the waiting tasks' claim ranks as `staged` (alias `st`) gives them; only rows whose rank changed. */
function reorderFrom(s: string, staged: string): string {
  return `
      UPDATE ${s}.tasks AS t SET priority = st.priority, order_rank = st.order_rank
      FROM ${staged} AS st
      WHERE t.batch_id = $1 AND t.stage = st.stage AND t.task_key = st.task_key
        AND t.status = 'PENDING' AND (t.priority <> st.priority OR t.order_rank <> st.order_rank)`;
}

/** $1 batchId — the rate keys `staged` renders, as SQLite's rekeyFrom: every status, only where the task runs what was staged. */
function rekeyFrom(s: string, staged: string): string {
  return `
      UPDATE ${s}.tasks AS t SET rate_key = st.rate_key
      FROM ${staged} AS st
      WHERE t.batch_id = $1 AND t.stage = st.stage AND t.task_key = st.task_key
        AND t.rate_key IS DISTINCT FROM st.rate_key AND t.fingerprint IS NOT DISTINCT FROM st.fingerprint`;
}

/**
 * The enqueue verb's statements (pg-enqueue.ts): the staged specs (pg_temp.staging) inserted
 * and compared with the tasks already stored, and the counts enqueue reports. Merged into
 * statements.ts's set; `s` is the store's quoted schema.
 */
export function enqueueStatements(s: string) {
  return {
    /** $1 batchId */
    maxSeq: `SELECT coalesce(max(seq), 0) AS base FROM ${s}.tasks WHERE batch_id = $1`,
    /** $1 batchId — reorderStaged for a list: of a key's repeated items, the first (FIRST_STAGED) ranks it, as it is the task. */
    reorderItems: reorderFrom(s, FIRST_STAGED),
    /** $1 batchId — rekeyFrom for a list (after observeItems and requeueItems). */
    rekeyItems: rekeyFrom(s, FIRST_STAGED),
    /** $1 batchId — the batch's highest task number, for a read (maxSeq's, named as count() reads it). */
    lastSeq: `SELECT coalesce(max(seq), 0) AS n FROM ${s}.tasks WHERE batch_id = $1`,
    /**
     * $1 batchId — folds the batch's kept counts of sessions that ended (their pid no longer in
     * pg_stat_activity) into shard 0 (task_counts, migration 017), so a batch that outlives many
     * sessions keeps a few rows. A live session's rows are its own; a new session that took an
     * ended one's pid and wrote meanwhile has its row folded with the rest, its sum unchanged.
     */
    foldCounts: `
      WITH gone AS (
        DELETE FROM ${s}.task_counts WHERE batch_id = $1 AND shard <> 0 AND shard <> pg_backend_pid()
          AND shard NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)
        RETURNING stage, bucket, n)
      INSERT INTO ${s}.task_counts AS c (batch_id, stage, bucket, shard, n)
      SELECT $1, stage, bucket, 0, sum(n) FROM gone GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
      ON CONFLICT (batch_id, stage, bucket, shard) DO UPDATE SET n = c.n + excluded.n`,
    /** $1 batchId $2 base $3 maxAttempts $4 now — copies pg_temp.staging; keys already in the batch are skipped. */
    insertStaged: `
      INSERT INTO ${s}.tasks (batch_id, task_key, stage, item_key, needs, seq, payload, max_attempts, created_at, fingerprint, seen_fingerprint, priority, order_rank, rate_key)
      SELECT $1, task_key, stage, item_key, needs, $2 + ord, payload, coalesce(max_attempts, $3), $4, fingerprint, fingerprint, priority, order_rank, rate_key
      FROM pg_temp.staging ORDER BY ord
      ON CONFLICT (batch_id, stage, task_key) DO NOTHING`,
    /**
     * $1 batchId — the claim order of this run (--order, --priority) for the tasks already
     * stored that wait (those --rerun-changed just put back included): a rerun with another
     * order re-ranks them. Touches only rows whose rank changed (an order given again changes none).
     */
    reorderStaged: reorderFrom(s, 'pg_temp.staging'),
    /** $1 batchId — rekeyFrom the staged specs (after observeStaged and requeueChanged). */
    rekeyStaged: rekeyFrom(s, 'pg_temp.staging'),
    /**
     * $1 batchId — records what the source shows now; unfinished tasks will run on it, so it
     * becomes their fingerprint too. Touches only rows whose file changed.
     */
    observeStaged: `
      UPDATE ${s}.tasks AS t
      SET seen_fingerprint = st.fingerprint,
          fingerprint = CASE WHEN t.status = 'SUCCESS' THEN t.fingerprint ELSE st.fingerprint END
      FROM pg_temp.staging AS st
      WHERE t.batch_id = $1 AND t.stage = st.stage AND t.task_key = st.task_key
        AND t.seen_fingerprint IS DISTINCT FROM st.fingerprint`,
    /**
     * $1 batchId — itemPayloads (see EnqueueOptions): what the source gives each task now, from
     * the first staged spec of its key; a row stored without a fingerprint (an older version)
     * takes it when its line is the same (compared as the JSON text of `item`).
     */
    observeItems: `
      UPDATE ${s}.tasks AS t
      SET seen_fingerprint = st.fingerprint,
          fingerprint = CASE WHEN t.fingerprint IS NULL AND (t.payload::json -> 'item')::text IS NOT DISTINCT FROM (st.payload::json -> 'item')::text
            THEN st.fingerprint ELSE t.fingerprint END
      FROM ${FIRST_STAGED} AS st
      WHERE t.batch_id = $1 AND t.stage = st.stage AND t.task_key = st.task_key
        AND t.seen_fingerprint IS DISTINCT FROM st.fingerprint`,
    /**
     * $1 batchId — itemPayloads with --rerun-changed: the new payload, marked `rerun` (it runs
     * even where its declared output is in place), back to PENDING with a fresh budget. An item
     * with a stage task RUNNING is left whole for the next time, so no stage runs on the new
     * record after one on the old.
     */
    requeueItems: `
      UPDATE ${s}.tasks AS t
      SET status = 'PENDING', attempts = 0, earlier_attempts = t.earlier_attempts + t.attempts, next_run_at = 0, busy_since = NULL, finished_at = NULL, result = NULL, last_error = NULL,
          fingerprint = t.seen_fingerprint, payload = left(st.payload, -1) || ',"rerun":true}'
      FROM ${FIRST_STAGED} AS st
      WHERE t.batch_id = $1 AND t.stage = st.stage AND t.task_key = st.task_key
        AND t.status <> 'RUNNING' AND t.seen_fingerprint IS DISTINCT FROM t.fingerprint
        AND NOT (t.item_key IS NOT NULL AND EXISTS (
          SELECT 1 FROM ${s}.tasks AS r WHERE r.batch_id = t.batch_id AND r.item_key = t.item_key AND r.status = 'RUNNING'))`,
    /** $1 batchId — itemPayloads: the items (with stages, not their tasks) whose record the source changed, and the first of them. */
    countChangedItems: `
      SELECT count(DISTINCT coalesce(item_key, task_key)) AS n,
        (SELECT coalesce(item_key, task_key) FROM ${s}.tasks WHERE batch_id = $1 AND seen_fingerprint IS DISTINCT FROM fingerprint ORDER BY seq LIMIT 1) AS example
      FROM ${s}.tasks WHERE batch_id = $1 AND seen_fingerprint IS DISTINCT FROM fingerprint`,
    /** $1 batchId — succeeded tasks that were up to date, so nothing ran (the partial index tasks_up_to_date). */
    countUpToDate: `SELECT count(*) AS n FROM ${s}.tasks WHERE batch_id = $1 AND status = 'SUCCESS' AND up_to_date`,
    /** $1 batchId — succeeded tasks whose file changed since (served by tasks_changed). */
    countChanged: `
      SELECT count(*) AS n FROM ${s}.tasks
      WHERE batch_id = $1 AND status = 'SUCCESS' AND seen_fingerprint IS DISTINCT FROM fingerprint`,
    /** $1 batchId — --rerun-changed: back to PENDING with a fresh budget, to run on the new file. */
    requeueChanged: `
      UPDATE ${s}.tasks
      SET status = 'PENDING', attempts = 0, earlier_attempts = earlier_attempts + attempts, next_run_at = 0, busy_since = NULL, finished_at = NULL, result = NULL, last_error = NULL,
          fingerprint = seen_fingerprint
      WHERE batch_id = $1 AND status = 'SUCCESS' AND seen_fingerprint IS DISTINCT FROM fingerprint`,
  };
}
