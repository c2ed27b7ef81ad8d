import type Database from 'better-sqlite3';

/**
 * Every SQL statement of the SQLite store, prepared once per connection. Each one's
 * comment lists its named parameters.
 */
/**
 * A PENDING task (alias `c`) whose needs all succeeded for its item; a task without needs
 * passes at once. Part of the claim itself, so no race can start a stage early.
 */
const NEEDS_MET = `(c.needs IS NULL OR json_array_length(c.needs) = (
  SELECT count(*) FROM tasks AS d INDEXED BY tasks_by_item
  WHERE d.batch_id = c.batch_id AND d.item_key = c.item_key AND d.status = 'SUCCESS'
    AND d.stage IN (SELECT value FROM json_each(c.needs))))`;

/** What a claim hands back: what a worker needs, no more (RETURNING * costs as much as the update). */
const CLAIMED = 'id, batch_id, task_key, stage, item_key, needs, seq, payload, attempts, max_attempts';

export const SQL = {
  /** ?name */
  batchByName: 'SELECT * FROM batches WHERE name = ?',
  listBatches: 'SELECT * FROM batches ORDER BY created_at, id',
  latestBatch: 'SELECT * FROM batches ORDER BY created_at DESC, id DESC LIMIT 1',
  /** @name @source @job @now — its id above every batch id the store ever had (id_high_water). */
  insertBatch: `
    INSERT INTO batches (id, name, source, job, created_at, updated_at)
    VALUES (max(coalesce((SELECT max(id) FROM batches), 0), (SELECT batches FROM id_high_water)) + 1, @name, @source, @job, @now, @now)`,
  /** @batchId @paused (0/1) @now */
  setPaused: 'UPDATE batches SET paused = @paused, updated_at = @now WHERE id = @batchId',
  /** @batchId @job @now */
  /** @batchId @job @now — a new definition, a new version (claims under the old one stop). */
  updateJob: 'UPDATE batches SET job = @job, updated_at = @now, job_version = job_version + 1 WHERE id = @batchId RETURNING job_version',
  /** ?batchId — read in the claim's write transaction, so no updateJob lands between check and claim. */
  jobVersion: 'SELECT job_version FROM batches WHERE id = ?',
  /**
   * @batchId @maxAttempts @stage (NULL = every stage) — unfinished tasks take the current
   * retry budget, never below the attempts they already made (a lowered budget ends them).
   */
  updateMaxAttempts: `
    UPDATE tasks SET max_attempts = max(@maxAttempts, attempts)
    WHERE batch_id = @batchId AND status IN ('PENDING', 'RUNNING') AND (@stage IS NULL OR stage = @stage)`,
  /**
   * @batchId @now — after a lowered budget: a waiting retry that has used it all is out of
   * attempts, so it fails now instead of running past the budget.
   */
  failExhausted: `
    UPDATE tasks SET status = 'FAILED', finished_at = @now,
      last_error = coalesce(last_error, 'failed') || ' (retry budget lowered; no attempts left)'
    WHERE batch_id = @batchId AND status = 'PENDING' AND attempts > 0 AND attempts >= max_attempts
    RETURNING item_key`,
  /** ?ids (JSON array) */
  statuses: `
    WITH j AS MATERIALIZED (SELECT value AS id FROM json_each(?))
    SELECT tasks.id, tasks.status FROM j JOIN tasks ON tasks.id = j.id`,
  /** ?batchId */
  maxSeq: 'SELECT coalesce(max(seq), 0) AS base FROM tasks WHERE batch_id = ?',
  /** The largest task id the store ever had: new task ids start above it (id_high_water). */
  taskIdBase: 'SELECT max(coalesce((SELECT max(id) FROM tasks), 0), (SELECT tasks FROM id_high_water)) AS base',
  /**
   * @batchId @base @idBase @maxAttempts @now — copies temp.staging; keys already in the batch
   * are skipped (their ids are left unused).
   */
  insertStaged: `
    INSERT INTO tasks (id, batch_id, task_key, stage, item_key, needs, seq, payload, max_attempts, created_at, fingerprint, seen_fingerprint)
    SELECT @idBase + rowid, @batchId, task_key, stage, item_key, needs, @base + rowid, payload, coalesce(max_attempts, @maxAttempts), @now,
      fingerprint, fingerprint
    FROM temp.staging WHERE true
    ON CONFLICT (batch_id, stage, task_key) DO NOTHING`,
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
  /** @batchId — succeeded tasks whose file changed since. */
  countChanged: `
    SELECT count(*) AS n FROM tasks INDEXED BY tasks_changed
    WHERE batch_id = @batchId AND status = 'SUCCESS' AND seen_fingerprint IS NOT fingerprint`,
  /** @batchId — --rerun-changed: back to PENDING with a fresh budget, to run on the new file. */
  requeueChanged: `
    UPDATE tasks
    SET status = 'PENDING', attempts = 0, next_run_at = 0, finished_at = NULL, result = NULL, last_error = NULL,
        fingerprint = seen_fingerprint
    WHERE batch_id = @batchId AND status = 'SUCCESS' AND seen_fingerprint IS NOT fingerprint`,

  /** @batchId @item @stages (JSON array) — the stored results of an item's needed stages. */
  inputs: `
    SELECT stage, result FROM tasks INDEXED BY tasks_by_item
    WHERE batch_id = @batchId AND item_key = @item AND stage IN (SELECT value FROM json_each(@stages))`,
  /** @batchId @item — every stage task of one item. */
  siblings: `
    SELECT id, stage, status, needs, last_error FROM tasks INDEXED BY tasks_by_item
    WHERE batch_id = @batchId AND item_key = @item`,
  /** @id @reason @now — a dependent whose need failed or was cancelled. */
  cancelPending: `
    UPDATE tasks SET status = 'CANCELLED', last_error = @reason, finished_at = @now
    WHERE id = @id AND status = 'PENDING'`,
  /** @id @reason @now — `cancel`: a PENDING task ends now; a RUNNING one finishes first. */
  cancelTask: `
    UPDATE tasks SET
      status = CASE WHEN status = 'PENDING' THEN 'CANCELLED' ELSE status END,
      finished_at = CASE WHEN status = 'PENDING' THEN @now ELSE finished_at END,
      last_error = CASE WHEN status = 'PENDING' THEN @reason ELSE last_error END,
      cancel_requested = CASE WHEN status = 'RUNNING' THEN 1 ELSE cancel_requested END
    WHERE id = @id AND status IN ('PENDING', 'RUNNING')
    RETURNING status`,
  /** ?id — a dependent whose need was reset by retry-failed. */
  revive: "UPDATE tasks SET status = 'PENDING', finished_at = NULL, last_error = NULL, next_run_at = 0 WHERE id = ? AND status = 'CANCELLED'",
  /**
   * The id the next attempt row will get: above every attempt id the store ever had, pruned
   * ones included (id_high_water), as it is the fencing token. One more primary-key read per
   * claim; no write.
   */
  nextAttemptId: 'SELECT max(coalesce((SELECT max(id) FROM attempts), 0), (SELECT attempts FROM id_high_water)) + 1 AS id',
  /**
   * @batchId @now @n — the first @n due PENDING tasks in index order whose needs all
   * succeeded for their item. Read inside the claim's write transaction, so no other
   * writer can take them before claimMany does.
   */
  dueTasks: `
    SELECT id FROM tasks AS c INDEXED BY tasks_by_state
    WHERE batch_id = @batchId AND status = 'PENDING' AND next_run_at <= @now AND attempts < max_attempts
      AND ${NEEDS_MET}
    ORDER BY next_run_at, attempts, id LIMIT @n`,
  /**
   * @list (JSON [[taskId, workerId, token, pid], …]) @owner @expires @now — claims the
   * listed tasks and counts the attempt in the same statement: a claim is an attempt. Each
   * token is the id its attempt row will get (the claim transaction is the only writer, so
   * ids from nextAttemptId on are free). One statement for the group: per-row statements
   * cost about 2.5× as much here. The list is MATERIALIZED first so every row is found by
   * its id whatever statistics an ANALYZE left (without it a plan can scan the table).
   */
  claimMany: `
    WITH j AS MATERIALIZED (
      SELECT value ->> 0 AS id, value ->> 1 AS worker, value ->> 2 AS token FROM json_each(@list))
    UPDATE tasks
    SET status = 'RUNNING', attempts = attempts + 1, lease_owner = @owner, lease_expires_at = @expires,
        worker_id = j.worker, started_at = @now, lease_token = j.token
    FROM j
    WHERE tasks.id = j.id AND tasks.status = 'PENDING'
    RETURNING ${CLAIMED}`,
  /** @list (as claimMany's) @host @owner @now @jobVersion — the claimed attempts' rows, their ids the tokens. */
  insertAttempts: `
    WITH j AS MATERIALIZED (
      SELECT value ->> 0 AS id, value ->> 1 AS worker, value ->> 2 AS token, value ->> 3 AS pid FROM json_each(@list))
    INSERT INTO attempts (id, task_id, attempt, worker_id, host, pid, owner, started_at, job_version)
    SELECT j.token, t.id, t.attempts, j.worker, @host, j.pid, @owner, @now, @jobVersion
    FROM j JOIN tasks AS t ON t.id = j.id
    WHERE t.lease_token = j.token`,
  /**
   * @list (JSON [[taskId, token, endedAt, result], …]) — successes, fenced: a task changes
   * only while the token still holds it. (A task appears once in the list.)
   */
  completeMany: `
    WITH j AS MATERIALIZED (
      SELECT value ->> 0 AS id, value ->> 1 AS token, value ->> 2 AS ended, value ->> 3 AS result FROM json_each(@list))
    UPDATE tasks
    SET status = 'SUCCESS', result = j.result, finished_at = j.ended, last_error = NULL,
        lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, cancel_requested = 0
    FROM j
    WHERE tasks.id = j.id AND tasks.status = 'RUNNING' AND tasks.lease_token = j.token
    RETURNING id, batch_id`,
  /**
   * @list (JSON [[token, endedAt, durationMs, exitCode, signal, outputTail, logPath, startedAt], …])
   * — the attempt rows of committed successes (startedAt NULL: the claim's).
   */
  endSuccesses: `
    WITH j AS MATERIALIZED (
      SELECT value ->> 0 AS id, value ->> 1 AS ended, value ->> 2 AS duration, value ->> 3 AS code, value ->> 4 AS signal,
             value ->> 5 AS tail, value ->> 6 AS log, value ->> 7 AS started
      FROM json_each(@list))
    UPDATE attempts
    SET ended_at = j.ended, outcome = 'SUCCESS', exit_code = j.code, signal = j.signal, error = NULL,
        duration_ms = j.duration, output_tail = j.tail, log_path = j.log, started_at = coalesce(j.started, attempts.started_at)
    FROM j
    WHERE attempts.id = j.id AND attempts.outcome IS NULL`,
  /** @taskId @token @endedAt @error @result — fenced: only while the token still holds the task. */
  complete: `
    UPDATE tasks
    SET status = 'SUCCESS', result = @result, finished_at = @endedAt, last_error = @error,
        lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, cancel_requested = 0
    WHERE id = @taskId AND status = 'RUNNING' AND lease_token = @token
    RETURNING batch_id, status, item_key`,
  /** @owner @expires — returns the tokens the owner still holds. */
  heartbeat: "UPDATE tasks INDEXED BY tasks_running SET lease_expires_at = @expires WHERE lease_owner = @owner AND status = 'RUNNING' RETURNING lease_token AS token",

  /**
   * @taskId @token @endedAt @error @retryAt — retryAt NULL fails the task now (permanent);
   * a task `cancel` asked to stop ends CANCELLED instead of retrying.
   */
  fail: `
    UPDATE tasks
    SET status = CASE WHEN cancel_requested THEN 'CANCELLED'
                      WHEN @retryAt IS NOT NULL AND attempts < max_attempts THEN 'PENDING' ELSE 'FAILED' END,
        finished_at = CASE WHEN NOT cancel_requested AND @retryAt IS NOT NULL AND attempts < max_attempts THEN NULL ELSE @endedAt END,
        next_run_at = coalesce(@retryAt, next_run_at),
        last_error = CASE WHEN cancel_requested THEN 'cancelled; its last attempt: ' || @error ELSE @error END,
        lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
    WHERE id = @taskId AND status = 'RUNNING' AND lease_token = @token
    RETURNING batch_id, status, item_key`,
  /** @taskId @token @endedAt — an interrupted attempt is not charged (a cancelled task ends CANCELLED). */
  interrupt: `
    UPDATE tasks
    SET status = CASE WHEN cancel_requested THEN 'CANCELLED' ELSE 'PENDING' END,
        finished_at = CASE WHEN cancel_requested THEN @endedAt ELSE finished_at END,
        last_error = CASE WHEN cancel_requested THEN 'cancelled' ELSE last_error END,
        attempts = attempts - 1, lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
    WHERE id = @taskId AND status = 'RUNNING' AND lease_token = @token
    RETURNING batch_id, status, item_key`,
  /** @token @endedAt @outcome @exitCode @signal @error @durationMs @outputTail @logPath @startedAt (NULL: the claim's) */
  endAttempt: `
    UPDATE attempts
    SET ended_at = @endedAt, outcome = @outcome, exit_code = @exitCode, signal = @signal, error = @error,
        duration_ms = @durationMs, output_tail = @outputTail, log_path = @logPath, started_at = coalesce(@startedAt, started_at)
    WHERE id = @token AND outcome IS NULL`,
  /**
   * @token @endedAt @durationMs @exitCode @signal @note @outputTail @logPath @startedAt — the late,
   * fenced-off report of an attempt recorded LOST: its real end fills in the unknown one (the
   * outcome stays LOST, the report is noted in the error). Once only: a LOST end is NULL until then.
   */
  lateEnd: `
    UPDATE attempts
    SET ended_at = @endedAt, duration_ms = @durationMs, exit_code = @exitCode, signal = @signal,
        error = error || @note, output_tail = @outputTail, log_path = @logPath, started_at = coalesce(@startedAt, started_at)
    WHERE id = @token AND outcome = 'LOST' AND ended_at IS NULL`,

  /** @batchId (NULL = every batch) */
  runningOwners: `
    SELECT DISTINCT lease_owner AS owner FROM tasks
    WHERE status = 'RUNNING' AND lease_owner IS NOT NULL AND (@batchId IS NULL OR batch_id = @batchId)`,
  /** @batchId (NULL = every batch) @now @dead (JSON array of dead owners) @self @live (JSON array of live local owners) */
  staleTasks: `
    SELECT * FROM tasks INDEXED BY tasks_running
    WHERE status = 'RUNNING' AND (@batchId IS NULL OR batch_id = @batchId) AND lease_owner IS NOT @self
      AND lease_owner NOT IN (SELECT value FROM json_each(@live))
      AND (lease_expires_at < @now OR lease_owner IN (SELECT value FROM json_each(@dead)))`,
  /** @id @now @error — the lost attempt stays counted, so a task that kills its machine cannot loop forever. */
  releaseLost: `
    UPDATE tasks
    SET status = CASE WHEN cancel_requested THEN 'CANCELLED' WHEN attempts < max_attempts THEN 'PENDING' ELSE 'FAILED' END,
        finished_at = CASE WHEN NOT cancel_requested AND attempts < max_attempts THEN NULL ELSE @now END,
        next_run_at = @now, last_error = @error,
        lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
    WHERE id = @id
    RETURNING status, item_key`,
  /**
   * @token @error — its owner died or went silent: when its command really ended is unknown,
   * so ended_at and duration_ms stay NULL (never the takeover time); a late report fills them in.
   */
  loseAttempt: `
    UPDATE attempts SET outcome = 'LOST', error = @error
    WHERE id = @token AND outcome IS NULL`,

  /**
   * @batchId — served by tasks_by_state alone. Counting per status and then the retrying
   * PENDING rows is ~4× faster than grouping by (status, attempts > 0) (5 vs 19 ms at 100k).
   */
  counts: `
    SELECT status, count(*) AS n, 0 AS tried FROM tasks INDEXED BY tasks_by_state WHERE batch_id = @batchId GROUP BY status
    UNION ALL
    SELECT 'PENDING', count(*), 1 FROM tasks INDEXED BY tasks_by_state WHERE batch_id = @batchId AND status = 'PENDING' AND attempts > 0`,
  /** ?batchId */
  /** ?batchId — only tasks whose needs are met: one waiting for a running need is not "due". */
  nextDue: `SELECT min(next_run_at) AS due FROM tasks AS c WHERE batch_id = ? AND status = 'PENDING' AND ${NEEDS_MET}`,
  /** @batchId — per stage, for batches with stages (served by tasks_by_stage alone). */
  stageCounts: `
    SELECT stage, status, attempts > 0 AS tried, count(*) AS n FROM tasks INDEXED BY tasks_by_stage
    WHERE batch_id = @batchId AND item_key IS NOT NULL GROUP BY stage, status, tried ORDER BY stage`,
  /** @batchId @limit */
  failedErrors: `
    SELECT coalesce(last_error, '(no error recorded)') AS error, count(*) AS count, min(task_key) AS example FROM tasks
    WHERE batch_id = @batchId AND status = 'FAILED'
    GROUP BY error ORDER BY count DESC, error LIMIT @limit`,
  /** @batchId @endedAt — the batch's last activity: every committed outcome except INTERRUPTED. */
  markFinished: `
    UPDATE batches SET last_finished_at = @endedAt
    WHERE id = @batchId AND (last_finished_at IS NULL OR last_finished_at < @endedAt)`,
  /** ?batchId */
  activity: 'SELECT first_started_at AS first, last_finished_at AS last FROM batches WHERE id = ?',
  /** @batchId @now */
  markStarted: 'UPDATE batches SET first_started_at = @now WHERE id = @batchId AND first_started_at IS NULL',
  /** @batchId @status (NULL = any) @error (NULL = any; substring of last_error) @attempted (1 = attempts > 0) */
  listTasks: `
    SELECT * FROM tasks
    WHERE batch_id = @batchId AND (@status IS NULL OR status = @status) AND (@attempted IS NULL OR attempts > 0)
      AND (@error IS NULL OR instr(last_error, @error) > 0)
    ORDER BY id`,
  /** Same parameters as listTasks; finished tasks, longest last attempt first. */
  slowestTasks: `
    SELECT * FROM tasks
    WHERE batch_id = @batchId AND (@status IS NULL OR status = @status) AND (@attempted IS NULL OR attempts > 0)
      AND (@error IS NULL OR instr(last_error, @error) > 0) AND finished_at IS NOT NULL
    ORDER BY finished_at - started_at DESC, id`,
  /**
   * @batchId @limit — the most recent attempts, returned newest first (the caller reverses).
   * CROSS JOIN keeps the planner walking attempts newest first and stopping at the limit;
   * left to itself it read every task of the batch and sorted their attempts (146 ms on
   * 200,000 tasks, against 3 ms).
   */
  batchAttempts: `
    SELECT a.*, t.task_key FROM attempts a CROSS JOIN tasks t ON t.id = a.task_id
    WHERE t.batch_id = @batchId ORDER BY a.id DESC LIMIT @limit`,
  /** ?batchId */
  batchAttemptCount: 'SELECT count(*) AS n FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE t.batch_id = ?',
  /** @before — batches with nothing PENDING or RUNNING whose last activity is older than @before. */
  finishedBatches: `
    SELECT b.* FROM batches b
    WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.batch_id = b.id AND t.status IN ('PENDING', 'RUNNING'))
      AND max(b.updated_at, coalesce((SELECT max(finished_at) FROM tasks t WHERE t.batch_id = b.id), 0)) < @before`,
  /** Before `prune` deletes: the largest ids so far stay taken (see migration 007). */
  raiseHighWater: `
    UPDATE id_high_water SET
      batches = max(batches, coalesce((SELECT max(id) FROM batches), 0)),
      tasks = max(tasks, coalesce((SELECT max(id) FROM tasks), 0)),
      attempts = max(attempts, coalesce((SELECT max(id) FROM attempts), 0))`,
  /**
   * @batchId @before — still finished and idle, checked before every chunk of a prune. Cheap on
   * a million tasks: the index answers "anything PENDING or RUNNING", and the batch row keeps
   * its last finish (the exact scan of finishedBatches ran once, when the batch was picked).
   */
  stillPrunable: `
    SELECT 1 AS ok FROM batches b
    WHERE b.id = @batchId
      AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.batch_id = b.id AND t.status IN ('PENDING', 'RUNNING'))
      AND max(b.updated_at, coalesce(b.last_finished_at, 0)) < @before`,
  /** @batchId @n — one chunk of a pruned batch's attempts; returns their log paths. */
  pruneAttempts: `
    DELETE FROM attempts WHERE id IN (
      SELECT a.id FROM tasks t JOIN attempts a ON a.task_id = t.id WHERE t.batch_id = @batchId LIMIT @n)
    RETURNING log_path AS path`,
  /** @batchId @n — one chunk of a pruned batch's tasks (their attempts are gone already). */
  pruneTasks: 'DELETE FROM tasks WHERE id IN (SELECT id FROM tasks WHERE batch_id = @batchId LIMIT @n)',
  /** ?batchId — tasks and attempts go with it (ON DELETE CASCADE). */
  deleteBatch: 'DELETE FROM batches WHERE id = ?',
  historySize: 'SELECT count(*) AS n FROM attempts',
  /** ?batchId ?key */
  /** ?batchId ?key ?stage (the key's first segment: a stage task's key starts with its stage) */
  taskByKey: "SELECT * FROM tasks WHERE batch_id = ? AND task_key = ? AND stage IN ('', ?)",
  /** ?taskId */
  attemptsOf: 'SELECT * FROM attempts WHERE task_id = ? ORDER BY id',
  /** ?id — a fresh retry budget; the attempts history is kept. */
  resetFailed: `
    UPDATE tasks SET status = 'PENDING', attempts = 0, next_run_at = 0, finished_at = NULL, last_error = NULL
    WHERE id = ? AND status = 'FAILED'
    RETURNING item_key`,
} as const;

export type Statements = Record<keyof typeof SQL, Database.Statement>;

export function prepareStatements(db: Database.Database): Statements {
  return Object.fromEntries(Object.entries(SQL).map(([name, sql]) => [name, db.prepare(sql)])) as Statements;
}

