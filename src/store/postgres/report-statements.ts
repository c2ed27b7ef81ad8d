import { KEPT_GROUP } from '../shared/db-rows.js';
import { lastFinishedOf } from './settle-statements.js';
import { needsMetIn } from './tick-statement.js';

/**
 * The read side: counts, listings, history, retry-failed and prune. Merged into statements.ts's
 * set; `s` is the store's quoted schema.
 */
export function reportStatements(s: string) {
  const needsMet = needsMetIn(s);
  return {
    /**
     * $1 batchId — the kept counts (task_counts, migration 017): the sessions' shards summed, a
     * few rows whatever the batch's size. Shaped as the groups toCounts folds: RETRYING is
     * PENDING tried, and QUEUED both part of the RUNNING group and the subset moved out of it.
     */
    counts: `
      SELECT ${KEPT_GROUP}, sum(n) AS n
      FROM ${s}.task_counts WHERE batch_id = $1 GROUP BY 1, 2
      UNION ALL
      SELECT 'QUEUED', false, coalesce(sum(n), 0) FROM ${s}.task_counts WHERE batch_id = $1 AND bucket = 'QUEUED'`,
    /** $1 batchId — the learned durations of its tasks, read from their ranks (LEARNED_RANK = 2^50). */
    learnedWork: `    SELECT count(*) FILTER (WHERE status IN ('PENDING', 'RUNNING')) AS open_known,
        coalesce(sum(-order_rank - 1125899906842624) FILTER (WHERE status IN ('PENDING', 'RUNNING')), 0) AS open_ms,
        count(*) FILTER (WHERE status = 'SUCCESS') AS done_known,
        coalesce(sum(-order_rank - 1125899906842624) FILTER (WHERE status = 'SUCCESS'), 0) AS done_ms
      FROM ${s}.tasks WHERE batch_id = $1 AND order_rank <= -1125899906842624`,
    /** $1 batchId — index lookups (tasks_by_state, the batch's finish rows), whatever the batch's size. */
    progress: `SELECT EXISTS (SELECT 1 FROM ${s}.tasks WHERE batch_id = $1 AND status IN ('PENDING', 'RUNNING')) AS open, ${lastFinishedOf(s)} AS last FROM ${s}.batches AS b WHERE id = $1`,
    /** $1 batchId */
    nextDue: `SELECT min(next_run_at) AS due FROM ${s}.tasks AS c WHERE batch_id = $1 AND status = 'PENDING' AND ${needsMet}`,
    /** $1 batchId — the retry due last (the state index, read from its high end). */
    lastRetryDue: `SELECT next_run_at AS due FROM ${s}.tasks WHERE batch_id = $1 AND status = 'PENDING' AND attempts > 0 ORDER BY next_run_at DESC LIMIT 1`,
    /** $1 batchId — per stage, for batches with stages (every task of such a batch is a stage task of an item): the kept counts, as `counts`. */
    stageCounts: `
      SELECT stage, ${KEPT_GROUP}, sum(n) AS n
      FROM ${s}.task_counts WHERE batch_id = $1 GROUP BY 1, 2, 3
      UNION ALL
      SELECT stage, 'QUEUED', false, sum(n) FROM ${s}.task_counts WHERE batch_id = $1 AND bucket = 'QUEUED' GROUP BY stage
      ORDER BY stage`,
    /** $1 batchId $2 limit */
    failedErrors: `
      SELECT coalesce(last_error, '(no error recorded)') AS error, count(*) AS count, min(task_key) AS example
      FROM ${s}.tasks WHERE batch_id = $1 AND status = 'FAILED'
      GROUP BY 1 ORDER BY count DESC, error LIMIT $2`,
    /** $1 batchId */
    activity: `SELECT first_started_at AS first, ${lastFinishedOf(s)} AS last FROM ${s}.batches AS b WHERE id = $1`,
    /** $1 batchId $2 status (NULL = any) $3 attempted (NULL = any, true = attempts > 0) $4 error substring (NULL = any) */
    listTasks: `
      SELECT * FROM ${s}.tasks
      WHERE batch_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::boolean IS NULL OR attempts > 0)
        AND ($4::text IS NULL OR strpos(last_error, $4) > 0)
      ORDER BY id`,
    /** listTasks's parameters, and $5 from $6 to: the page of the tasks with ids in [$5, $6], by primary key (see openTasks). */
    taskPage: `
      SELECT * FROM ${s}.tasks
      WHERE id BETWEEN $5 AND $6 AND batch_id + 0 = $1 AND ($2::text IS NULL OR status = $2) AND ($3::boolean IS NULL OR attempts > 0)
        AND ($4::text IS NULL OR strpos(last_error, $4) > 0)
      ORDER BY id`,
    /** $1 batchId $2 status $3 attempted $4 from $5 to — a page of outcomes (`results`): five columns, in id order. */
    outcomePage: `
      SELECT task_key, stage, status, last_error, result FROM ${s}.tasks
      WHERE id BETWEEN $4 AND $5 AND batch_id + 0 = $1 AND ($2::text IS NULL OR status = $2) AND ($3::boolean IS NULL OR attempts > 0)
      ORDER BY id`,
    /** $1 batchId $2 limit — RUNNING tasks, earliest started first (only RUNNING index entries are read). */
    runningTasks: `
      SELECT * FROM ${s}.tasks WHERE status = 'RUNNING' AND batch_id = $1 AND NOT queued ORDER BY started_at, id LIMIT $2`,
    /** Same parameters as listTasks; finished tasks, longest last attempt first (NULLs last, as in SQLite). */
    slowestTasks: `
      SELECT * FROM ${s}.tasks
      WHERE batch_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::boolean IS NULL OR attempts > 0)
        AND ($4::text IS NULL OR strpos(last_error, $4) > 0) AND finished_at IS NOT NULL
      ORDER BY finished_at - started_at DESC NULLS LAST, id`,
    /** $1 ids bigint[] — a fresh retry budget; the attempts history is kept. */
    resetFailed: `
      UPDATE ${s}.tasks SET status = 'PENDING', attempts = 0, earlier_attempts = earlier_attempts + attempts, next_run_at = 0, busy_since = NULL, finished_at = NULL, last_error = NULL
      WHERE id = ANY($1::bigint[]) AND status = 'FAILED'
      RETURNING item_key`,
    /** $1 batchId $2 key $3 stage (the key's first segment: a stage task's key starts with its stage) */
    taskByKey: `SELECT * FROM ${s}.tasks WHERE batch_id = $1 AND task_key = $2 AND stage IN ('', $3)`,
    /** $1 taskId */
    attemptsOf: `SELECT * FROM ${s}.attempts WHERE task_id = $1 ORDER BY id`,
    /** $1 batchId $2 limit — the most recent attempts, returned newest first (the caller reverses). */
    batchAttempts: `
      SELECT a.*, t.task_key FROM ${s}.attempts a JOIN ${s}.tasks t ON t.id = a.task_id
      WHERE t.batch_id = $1 ORDER BY a.id DESC LIMIT $2`,
    /**
     * $1 batchId $2 bounds bigint[] (ascending whole ms) — ended attempts per outcome and duration
     * bucket; the bucket is how many bounds lie below the duration (≤ a bound is inside it).
     */
    attemptStats: `
      SELECT a.outcome, width_bucket(a.duration_ms - 1, $2::bigint[]) AS bucket, count(*) AS n, sum(a.duration_ms) AS sum_ms
      FROM ${s}.tasks t JOIN ${s}.attempts a ON a.task_id = t.id
      WHERE t.batch_id = $1 AND a.outcome IS NOT NULL GROUP BY 1, 2`,
    /** $1 batchId */
    batchAttemptCount: `SELECT count(*) AS n FROM ${s}.attempts a JOIN ${s}.tasks t ON t.id = a.task_id WHERE t.batch_id = $1`,
    /** $1 before $2 batchId (NULL = any) — batches with nothing PENDING or RUNNING, last active before $1. */
    finishedBatches: `
      SELECT b.* FROM ${s}.batches b
      WHERE ($2::bigint IS NULL OR b.id = $2)
        AND NOT EXISTS (SELECT 1 FROM ${s}.tasks t WHERE t.batch_id = b.id AND t.status IN ('PENDING', 'RUNNING'))
        AND greatest(b.updated_at, coalesce((SELECT max(finished_at) FROM ${s}.tasks t WHERE t.batch_id = b.id), 0)) < $1
      ORDER BY b.id`,
    /** $1 batchId — the delete takes this lock anyway; taking it first makes the re-check see every commit before it. */
    lockBatchForDelete: `SELECT id FROM ${s}.batches WHERE id = $1 FOR UPDATE`,
    /** $1 batchId $2 before — still finished and idle, checked (under the batch's locks) before every chunk of a prune. */
    stillPrunable: `
      SELECT 1 AS ok FROM ${s}.batches b
      WHERE b.id = $1
        AND NOT EXISTS (SELECT 1 FROM ${s}.tasks t WHERE t.batch_id = b.id AND t.status IN ('PENDING', 'RUNNING'))
        AND greatest(b.updated_at, coalesce(${lastFinishedOf(s)}, 0)) < $2`,
    /** $1 batchId — the span of the batch's task ids (tasks_by_state holds the id: an index-only pass). */
    taskIdRange: `SELECT min(id) AS lo, max(id) AS hi FROM ${s}.tasks WHERE batch_id = $1`,
    /**
     * $1 batchId $2 from $3 to $4 afterTask $5 afterAttempt $6 n — one chunk of a pruned batch's
     * attempts: those of its tasks with ids in [$2, $3], after ($4, $5), the first $6 in (task,
     * attempt) order; returns them with their log paths (see prune-in-chunks.ts). Read through
     * attempts_by_task from where the last chunk stopped, so never the index entries of the rows
     * chunks before it deleted (dead until a vacuum). \`batch_id + 0\`: never the batch's index,
     * which would read the whole batch for every chunk.
     */
    pruneAttempts: `
      DELETE FROM ${s}.attempts WHERE id IN (
        SELECT a.id FROM ${s}.attempts a JOIN ${s}.tasks t ON t.id = a.task_id
        WHERE a.task_id BETWEEN $2 AND $3 AND (a.task_id, a.id) > ($4::bigint, $5::bigint)
          AND t.id BETWEEN $2 AND $3 AND t.batch_id + 0 = $1
        ORDER BY a.task_id, a.id LIMIT $6)
      RETURNING task_id, id, log_path AS path`,
    /** $1 batchId $2 from $3 to — the pruned batch's tasks with ids in [$2, $3] (their attempts are gone already), by primary key. */
    pruneTasks: `DELETE FROM ${s}.tasks WHERE id BETWEEN $2 AND $3 AND batch_id + 0 = $1`,
    /** $1 batchId — tasks and attempts go with it (ON DELETE CASCADE). */
    deleteBatch: `DELETE FROM ${s}.batches WHERE id = $1`,
    historySize: `SELECT count(*) AS n FROM ${s}.attempts`,
    /** $1 source — the median duration of each key's successes in every batch of the source (--order history); a success that ran nothing (up to date, 0 ms) is none. */
    learnedDurations: `      SELECT stage, key, avg(ms) AS ms FROM (
        SELECT t.stage, t.task_key AS key, a.duration_ms AS ms,
          row_number() OVER (PARTITION BY t.stage, t.task_key ORDER BY a.duration_ms) AS r,
          count(*) OVER (PARTITION BY t.stage, t.task_key) AS c
        FROM ${s}.batches AS b JOIN ${s}.tasks AS t ON t.batch_id = b.id JOIN ${s}.attempts AS a ON a.task_id = t.id
        WHERE b.source = $1 AND a.outcome = 'SUCCESS' AND a.duration_ms > 0) AS d
      WHERE r IN ((c + 1) / 2, (c + 2) / 2)
      GROUP BY stage, key`,
  };
}
