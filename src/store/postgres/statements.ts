import { SERVER_NOW } from './pg-clock.js';
import type { Statement } from './pg-db.js';
import { lastFinishedOf, settleStatements } from './settle-statements.js';
import { claimCtes, needsMetIn, startsMarked, tickStatement } from './tick-statement.js';

/** The first staged spec of each key: of a list's repeated items the first is the task (as for the insert). */
const FIRST_STAGED = '(SELECT DISTINCT ON (stage, task_key) stage, task_key, payload, fingerprint FROM pg_temp.staging ORDER BY stage, task_key, ord)';

/**
 * Every SQL statement of the PostgreSQL store, named like their SQLite twins and prepared
 * once per pooled connection. Each one's comment lists its positional parameters. Tables
 * are qualified with the store's schema (`s`, a validated plain identifier), so no
 * connection state such as search_path is needed.
 */
function sql(s: string) {
  const needsMet = needsMetIn(s);
  return {
    /** $1 name */
    batchByName: `SELECT * FROM ${s}.batches WHERE name = $1`,
    listBatches: `SELECT * FROM ${s}.batches ORDER BY created_at, id`,
    latestBatch: `SELECT * FROM ${s}.batches ORDER BY created_at DESC, id DESC LIMIT 1`,
    /** $1 name $2 source $3 job $4 now — concurrent creators of one name: one inserts, the others get no row. */
    insertBatch: `
      INSERT INTO ${s}.batches (name, source, job, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
      ON CONFLICT (name) DO NOTHING RETURNING id`,
    /** $1 batchId */
    batchName: `SELECT name FROM ${s}.batches WHERE id = $1`,
    /**
     * $1 lock key — serialises enqueue, retryFailed and prune of one batch (so `seq` stays
     * unique). An advisory lock, not the batch row: settles update that row and must never
     * wait for a million-row enqueue.
     */
    lockBatchWork: 'SELECT pg_advisory_xact_lock($1::bigint)',
    /** $1 batchId $2 paused $3 now */
    setPaused: `UPDATE ${s}.batches SET paused = $2, updated_at = $3 WHERE id = $1`,
    /** $1 batchId $2 job $3 now */
    /**
     * $1 batchId — updateJob's lock on the batch row: FOR UPDATE, the one row lock a claim's
     * FOR KEY SHARE (claimVersion) waits for, so no claim checks the old version while a new
     * one commits. (Settles' batch updates take weaker locks and do not wait for claims.)
     */
    lockBatchForJob: `SELECT id FROM ${s}.batches WHERE id = $1 FOR UPDATE`,
    /** $1 batchId $2 job $3 now — a new definition, a new version (claims under the old one stop). */
    updateJob: `UPDATE ${s}.batches SET job = $2, updated_at = $3, job_version = job_version + 1 WHERE id = $1 RETURNING job_version`,
    /**
     * $1 batchId — the version a claim runs under, read FOR KEY SHARE: it waits for an updateJob
     * in progress and then reads its new version, and holds it off until the claim commits.
     */
    claimVersion: `SELECT job_version, first_started_at FROM ${s}.batches WHERE id = $1 FOR KEY SHARE`,
    /**
     * $1 batchId $2 maxAttempts $3 stage (NULL = every stage) — unfinished tasks take the current
     * retry budget, never below the attempts they already made (a lowered budget ends them).
     */
    updateMaxAttempts: `
      UPDATE ${s}.tasks SET max_attempts = greatest($2, attempts)
      WHERE batch_id = $1 AND status IN ('PENDING', 'RUNNING') AND ($3::text IS NULL OR stage = $3)`,
    /**
     * $1 batchId $2 now — after a lowered budget: a waiting retry that has used it all is out
     * of attempts, so it fails now instead of running past the budget.
     */
    failExhausted: `
      UPDATE ${s}.tasks SET status = 'FAILED', finished_at = $2,
        last_error = coalesce(last_error, 'failed') || ' (retry budget lowered; no attempts left)'
      WHERE batch_id = $1 AND status = 'PENDING' AND attempts > 0 AND attempts >= max_attempts
      RETURNING item_key`,
    /** $1 ids bigint[] */
    statuses: `SELECT id, status FROM ${s}.tasks WHERE id = ANY($1::bigint[])`,
    /** $1 batchId — committed successes whose declared output's rename is not confirmed (migration 010). */
    pendingOutputs: `SELECT id, batch_id, task_key, output_temp, result FROM ${s}.tasks WHERE batch_id = $1 AND output_temp IS NOT NULL AND status = 'SUCCESS' ORDER BY id`,
    /** The same in every batch of the store (read through the partial index of migration 010). */
    allPendingOutputs: `SELECT id, batch_id, task_key, output_temp, result FROM ${s}.tasks WHERE output_temp IS NOT NULL AND status = 'SUCCESS' ORDER BY id`,
    /** $1 taskIds $2 temps — their outputs are in place (only while that temp is still the recorded one). */
    outputsPlaced: `
      UPDATE ${s}.tasks AS t SET output_temp = NULL
      FROM unnest($1::bigint[], $2::text[]) AS p(id, temp) WHERE t.id = p.id AND t.output_temp = p.temp`,
    /** $1 batchId */
    maxSeq: `SELECT coalesce(max(seq), 0) AS base FROM ${s}.tasks WHERE batch_id = $1`,
    /** $1 batchId — the batch's highest task number, for a read (maxSeq's, named as count() reads it). */
    lastSeq: `SELECT coalesce(max(seq), 0) AS n FROM ${s}.tasks WHERE batch_id = $1`,
    /** $1 batchId $2 base $3 maxAttempts $4 now — copies pg_temp.staging; keys already in the batch are skipped. */
    insertStaged: `
      INSERT INTO ${s}.tasks (batch_id, task_key, stage, item_key, needs, seq, payload, max_attempts, created_at, fingerprint, seen_fingerprint)
      SELECT $1, task_key, stage, item_key, needs, $2 + ord, payload, coalesce(max_attempts, $3), $4, fingerprint, fingerprint
      FROM pg_temp.staging ORDER BY ord
      ON CONFLICT (batch_id, stage, task_key) DO NOTHING`,
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
      SET status = 'PENDING', attempts = 0, earlier_attempts = t.earlier_attempts + t.attempts, next_run_at = 0, finished_at = NULL, result = NULL, last_error = NULL,
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
      SET status = 'PENDING', attempts = 0, earlier_attempts = earlier_attempts + attempts, next_run_at = 0, finished_at = NULL, result = NULL, last_error = NULL,
          fingerprint = seen_fingerprint
      WHERE batch_id = $1 AND status = 'SUCCESS' AND seen_fingerprint IS DISTINCT FROM fingerprint`,

    /**
     * $1 batchId $2 now $3 owner $4 leaseMs $5 workerIds text[] $6 host $7 pids int[] $8 jobVersion
     * $9 leaseFrom (NULL: the server's clock, as always outside the contract tests)
     * $10 queued boolean[] (true for a slot's place behind the attempt it runs) —
     * a whole claim in one statement: locks up to one due PENDING task per worker, skipping rows
     * another coordinator is claiming (SKIP LOCKED: no waiting, no double hand-out), counts the
     * attempt (a claim is an attempt) and opens its attempt row, whose id, drawn first in slot
     * order, is the task's fencing token. `n` is the task's rank, and so its worker's slot.
     */
    claimTasks: `
      WITH ${claimCtes(s, needsMet, (i) => `$${i}`, '$8')}
      SELECT * FROM claimed ORDER BY n`,
    /** A tick of successes in one statement (tick-statement.ts). */
    tick: tickStatement(s),
    /** $1 batchId $2 item $3 stages (JSON array) — the stored results of an item's needed stages. */
    inputs: `
      SELECT stage, result FROM ${s}.tasks
      WHERE batch_id = $1 AND item_key = $2 AND stage IN (SELECT jsonb_array_elements_text($3::jsonb))`,
    /** $1 batchId $2 item — every stage task of one item, locked in id order. */
    siblings: `
      SELECT id, stage, status, needs, last_error FROM ${s}.tasks
      WHERE batch_id = $1 AND item_key = $2 ORDER BY id FOR UPDATE`,
    /** $1 id $2 reason $3 now — a dependent whose need failed or was cancelled. */
    cancelPending: `
      UPDATE ${s}.tasks SET status = 'CANCELLED', last_error = $2, finished_at = $3
      WHERE id = $1 AND status = 'PENDING'`,
    /**
     * $1 batchId $2 from $3 to — \`cancel\`: the tasks it can still stop (PENDING, RUNNING) with
     * ids in [$2, $3], by primary key (\`batch_id + 0\`: never the batch's index, which would read
     * the whole batch for every range).
     */
    openTasks: `
      SELECT id, task_key FROM ${s}.tasks
      WHERE id BETWEEN $2 AND $3 AND batch_id + 0 = $1 AND status IN ('PENDING', 'RUNNING') ORDER BY id`,
    /** $1 ids bigint[] $2 reason $3 now — \`cancel\`: PENDING tasks end now; RUNNING ones finish first. */
    cancelTasks: `
      UPDATE ${s}.tasks SET
        status = CASE WHEN status = 'PENDING' THEN 'CANCELLED' ELSE status END,
        finished_at = CASE WHEN status = 'PENDING' THEN $3 ELSE finished_at END,
        last_error = CASE WHEN status = 'PENDING' THEN $2 ELSE last_error END,
        cancel_requested = (status = 'RUNNING' OR cancel_requested)
      WHERE id = ANY($1::bigint[]) AND status IN ('PENDING', 'RUNNING')
      RETURNING status`,
    /** $1 batchId $2 from $3 to $4 reason $5 now — the items of the stage tasks in [$2, $3] that a \`cancel\` at $5 ended or asked to stop. */
    cancelledItems: `
      SELECT DISTINCT item_key FROM ${s}.tasks
      WHERE id BETWEEN $2 AND $3 AND batch_id + 0 = $1 AND item_key IS NOT NULL
        AND (status = 'CANCELLED' AND finished_at = $5 AND last_error = $4 OR status = 'RUNNING' AND cancel_requested)`,
    /** $1 ids bigint[] — dependents whose need was reset by retry-failed. */
    revive: `
      UPDATE ${s}.tasks SET status = 'PENDING', finished_at = NULL, last_error = NULL, next_run_at = 0
      WHERE id = ANY($1::bigint[]) AND status = 'CANCELLED'`,
    /**
     * $1 taskIds bigint[] $2 tokens bigint[] $3 ats bigint[] — queued attempts that started: their
     * tasks run from `at` (fenced: a task taken over or settled meanwhile is left alone). Rows
     * locked in id order, like every multi-row writer, against deadlocks.
     */
    markRunning: `
      WITH j AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS j(id, token, at)),
      locked AS (SELECT t.id FROM ${s}.tasks AS t JOIN j ON t.id = j.id ORDER BY t.id FOR UPDATE OF t)
      ${startsMarked(s)}`,
    /** $1 batchId $2 now — set once, so only a batch's very first claims contend for its row. */
    markStarted: `UPDATE ${s}.batches SET first_started_at = $2 WHERE id = $1 AND first_started_at IS NULL`,
    /**
     * $1 owner $2 from (NULL: the server's clock) $3 leaseMs — rows locked in id order, like
     * every multi-row writer, against deadlocks; returns the tokens the owner still holds.
     */
    heartbeat: `
      UPDATE ${s}.tasks SET lease_expires_at = coalesce($2::bigint, ${SERVER_NOW}) + $3::bigint
      WHERE id IN (SELECT id FROM ${s}.tasks WHERE lease_owner = $1 AND status = 'RUNNING' ORDER BY id FOR UPDATE)
      RETURNING lease_token AS token`,

    /** $1 batchId (NULL = every batch) $2 now (NULL: the server's clock) — each owner's latest lease end, and whether it has passed. */
    runningOwners: `
      SELECT lease_owner AS owner, max(lease_expires_at) AS lease_end, max(lease_expires_at) < coalesce($2::bigint, ${SERVER_NOW}) AS expired FROM ${s}.tasks
      WHERE status = 'RUNNING' AND lease_owner IS NOT NULL AND ($1::bigint IS NULL OR batch_id = $1)
      GROUP BY lease_owner`,
    /**
     * $1 batchId (NULL = every batch) $2 now (NULL: the server's clock) $3 dead owners text[] $4 self $5 live local owners
     * text[] — locked, so two recovering coordinators never both release one. A row another
     * session holds (a settle in flight, or a host frozen mid-transaction) is skipped, never
     * waited for: the next recovery, a poll later, looks again.
     */
    staleTasks: `
      SELECT * FROM ${s}.tasks
      WHERE status = 'RUNNING' AND ($1::bigint IS NULL OR batch_id = $1) AND lease_owner IS DISTINCT FROM $4
        AND (lease_owner = ANY($5::text[])) IS NOT TRUE
        AND (lease_expires_at < coalesce($2::bigint, ${SERVER_NOW}) OR lease_owner = ANY($3::text[]))
      ORDER BY id FOR UPDATE SKIP LOCKED`,
    /** $1 id $2 now $3 error — the lost attempt stays counted, so a task that kills its machine cannot loop forever. */
    releaseLost: `
      UPDATE ${s}.tasks
      SET status = CASE WHEN cancel_requested THEN 'CANCELLED' WHEN attempts < max_attempts THEN 'PENDING' ELSE 'FAILED' END,
          finished_at = CASE WHEN NOT cancel_requested AND attempts < max_attempts THEN NULL ELSE $2::bigint END,
          next_run_at = $2, last_error = $3,
          lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
      WHERE id = $1
      RETURNING status`,
    /**
     * $1 token $2 error — its owner died or went silent: when its command really ended is unknown,
     * so ended_at and duration_ms stay NULL (never the takeover time); a late report fills them in.
     */
    loseAttempt: `
      UPDATE ${s}.attempts SET outcome = 'LOST', error = $2
      WHERE id = $1 AND outcome IS NULL`,
    ...settleStatements(s),
    ...reportStatements(s),
  };
}

/** The read side: counts, listings, history and prune. */
function reportStatements(s: string) {
  const needsMet = needsMetIn(s);
  return {
    /** $1 batchId — covered by tasks_by_state (index-only once the batch is a minority of the table). */
    counts: `
      SELECT status, attempts > 0 AS tried, count(*) AS n FROM ${s}.tasks
      WHERE batch_id = $1 GROUP BY status, tried
      UNION ALL
      SELECT 'QUEUED', false, count(*) FROM ${s}.tasks WHERE batch_id = $1 AND status = 'RUNNING' AND queued`,
    /** $1 batchId — index lookups (tasks_by_state, the batch's finish rows), whatever the batch's size. */
    progress: `SELECT EXISTS (SELECT 1 FROM ${s}.tasks WHERE batch_id = $1 AND status IN ('PENDING', 'RUNNING')) AS open, ${lastFinishedOf(s)} AS last FROM ${s}.batches AS b WHERE id = $1`,
    /** $1 batchId */
    nextDue: `SELECT min(next_run_at) AS due FROM ${s}.tasks AS c WHERE batch_id = $1 AND status = 'PENDING' AND ${needsMet}`,
    /** $1 batchId — the retry due last (the state index, read from its high end). */
    lastRetryDue: `SELECT next_run_at AS due FROM ${s}.tasks WHERE batch_id = $1 AND status = 'PENDING' AND attempts > 0 ORDER BY next_run_at DESC LIMIT 1`,
    /** $1 batchId — per stage, for batches with stages (tasks_by_stage). */
    stageCounts: `
      SELECT stage, status, attempts > 0 AS tried, count(*) AS n FROM ${s}.tasks
      WHERE batch_id = $1 AND item_key IS NOT NULL GROUP BY stage, status, tried
      UNION ALL
      SELECT stage, 'QUEUED', false, count(*) FROM ${s}.tasks
      WHERE batch_id = $1 AND status = 'RUNNING' AND queued GROUP BY stage
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
      UPDATE ${s}.tasks SET status = 'PENDING', attempts = 0, earlier_attempts = earlier_attempts + attempts, next_run_at = 0, finished_at = NULL, last_error = NULL
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
  };
}

export type Statements = Record<keyof ReturnType<typeof sql>, Statement>;

/** Named per statement; a pool serves one store, so one schema, so the names never clash. */
export function prepareStatements(schema: string): Statements {
  return Object.fromEntries(
    Object.entries(sql(`"${schema}"`)).map(([name, text]) => [name, { name: `splitdance_${name}`, text }]),
  ) as Statements;
}
