import type Database from 'better-sqlite3';
import { LEASE_SQL, NEEDS_MET } from './lease-statements.js';
import { HOOK_SQL } from './hook-statements.js';
import { KEPT_GROUP } from '../shared/db-rows.js';

/**
 * Every SQL statement of the SQLite store, prepared once per connection. Each one's
 * comment lists its named parameters. A bound LIMIT is written `@n + 0` (see lease-statements.ts).
 */
export const SQL = {
  ...LEASE_SQL,
  ...HOOK_SQL,
  /** Where temporary data goes: writes keep their statement journals in memory (see SqliteStore.write). */
  tempInMemory: 'PRAGMA temp_store = MEMORY',
  tempInFiles: 'PRAGMA temp_store = FILE',
  /** ?name */
  batchByName: 'SELECT * FROM batches WHERE name = ?',
  listBatches: 'SELECT * FROM batches ORDER BY created_at, id',
  latestBatch: 'SELECT * FROM batches ORDER BY created_at DESC, id DESC LIMIT 1',
  /** @batchId @paused (0/1) @now */
  setPaused: 'UPDATE batches SET paused = @paused, updated_at = @now WHERE id = @batchId',
  /** @batchId @owner @level @max @pace @now — an owner's --adaptive level, made or refreshed. */
  publishLevel: `
    INSERT INTO adaptive_levels (batch_id, owner, level, max_level, pace, updated_at) VALUES (@batchId, @owner, @level, @max, @pace, @now)
    ON CONFLICT (batch_id, owner) DO UPDATE SET level = excluded.level, max_level = excluded.max_level, pace = excluded.pace, updated_at = excluded.updated_at`,
  /** @batchId @owner */
  dropLevel: 'DELETE FROM adaptive_levels WHERE batch_id = @batchId AND owner = @owner',
  /** @batchId @since */
  adaptiveLevels: 'SELECT owner, level, max_level, pace, updated_at FROM adaptive_levels WHERE batch_id = @batchId AND updated_at >= @since ORDER BY level DESC, owner',
  /** ?batchId — the batch's rate gate (--rate), or none yet. */
  rateGate: 'SELECT next_at FROM rate_gates WHERE batch_id = ?',
  /** @batchId @next */
  moveRateGate: 'INSERT INTO rate_gates (batch_id, next_at) VALUES (@batchId, @next) ON CONFLICT (batch_id) DO UPDATE SET next_at = excluded.next_at',
  /**
   * @batchId @patch @now — the fields of @patch (JSON) set in the batch's stored definition, the
   * rest as it is now, without a new version: what `set` changes (order, priority) no attempt runs by.
   */
  setOptions: 'UPDATE batches SET job = json_patch(job, @patch), updated_at = @now WHERE id = @batchId',
  /** @batchId @list (JSON [[taskId, priority, rank], …]) — new claim ranks for tasks of the batch that still wait. */
  rerank: `
    WITH j AS MATERIALIZED (SELECT value ->> 0 AS id, value ->> 1 AS priority, value ->> 2 AS rank FROM jsonb_each(@list))
    UPDATE tasks SET priority = j.priority, order_rank = j.rank
    FROM j WHERE tasks.id = j.id AND tasks.batch_id = @batchId AND tasks.status = 'PENDING'
      AND (tasks.priority <> j.priority OR tasks.order_rank <> j.rank)`,
  /** @batchId @job @now — a new definition, a new version (claims under the old one stop). */
  updateJob: 'UPDATE batches SET job = @job, updated_at = @now, job_version = job_version + 1 WHERE id = @batchId RETURNING job_version',
  /** ?batchId — the span of the batch's task ids, for whole-batch updates made range by range. */
  taskIdRange: 'SELECT min(id) AS lo, max(id) AS hi FROM tasks WHERE batch_id = ?',
  /**
   * @batchId @from @to @maxAttempts @stage (NULL = every stage) — unfinished tasks with ids in
   * [@from, @to] take the current retry budget, never below the attempts they already made (a
   * lowered budget ends them). Rows already on it are left alone. NOT INDEXED: the id range
   * leads, so a range reads only its own rows.
   */
  updateMaxAttempts: `
    UPDATE tasks NOT INDEXED SET max_attempts = max(@maxAttempts, attempts)
    WHERE id BETWEEN @from AND @to AND batch_id = @batchId AND status IN ('PENDING', 'RUNNING')
      AND (@stage IS NULL OR stage = @stage) AND max_attempts IS NOT max(@maxAttempts, attempts)`,
  /**
   * @batchId @from @to @now — after a lowered budget: a waiting retry that has used it all is
   * out of attempts, so it fails now instead of running past the budget.
   */
  failExhausted: `
    UPDATE tasks NOT INDEXED SET status = 'FAILED', finished_at = @now,
      last_error = coalesce(last_error, 'failed') || ' (retry budget lowered; no attempts left)'
    WHERE id BETWEEN @from AND @to AND batch_id = @batchId AND status = 'PENDING' AND attempts > 0 AND attempts >= max_attempts
    RETURNING item_key`,
  /** ?ids (JSON array) */
  statuses: `
    WITH j AS MATERIALIZED (SELECT value AS id FROM json_each(?))
    SELECT tasks.id, tasks.status FROM j JOIN tasks ON tasks.id = j.id`,
  /** @batchId — succeeded tasks that were up to date, so nothing ran (the partial index tasks_up_to_date). */
  countUpToDate: `SELECT count(*) AS n FROM tasks WHERE batch_id = @batchId AND status = 'SUCCESS' AND up_to_date = 1`,
  /** @batchId — the batch's highest task number (what enqueue's maxSeq numbers new tasks after). */
  lastSeq: 'SELECT coalesce(max(seq), 0) AS n FROM tasks WHERE batch_id = @batchId',
  /** @batchId — succeeded tasks whose file changed since. */
  countChanged: `
    SELECT count(*) AS n FROM tasks INDEXED BY tasks_changed
    WHERE batch_id = @batchId AND status = 'SUCCESS' AND seen_fingerprint IS NOT fingerprint`,

  /** @batchId @from @to — `cancel`: the tasks it can still stop (PENDING, RUNNING) with ids in [@from, @to], by rowid. */
  openTasks: `
    SELECT id, task_key FROM tasks NOT INDEXED
    WHERE id BETWEEN @from AND @to AND batch_id = @batchId AND status IN ('PENDING', 'RUNNING') ORDER BY id`,
  /** @ids (JSON array) @reason @now — `cancel`: PENDING tasks end now; RUNNING ones finish first. */
  cancelTasks: `
    WITH j AS MATERIALIZED (SELECT value AS id FROM json_each(@ids))
    UPDATE tasks SET
      status = CASE WHEN status = 'PENDING' THEN 'CANCELLED' ELSE status END,
      finished_at = CASE WHEN status = 'PENDING' THEN @now ELSE finished_at END,
      last_error = CASE WHEN status = 'PENDING' THEN @reason ELSE last_error END,
      cancel_requested = CASE WHEN status = 'RUNNING' THEN 1 ELSE cancel_requested END
    FROM j
    WHERE tasks.id = j.id AND status IN ('PENDING', 'RUNNING')
    RETURNING status`,
  /** @batchId @from @to @reason @now — the items of the stage tasks in [@from, @to] that a `cancel` at @now ended or asked to stop. */
  cancelledItems: `
    SELECT DISTINCT item_key FROM tasks NOT INDEXED
    WHERE id BETWEEN @from AND @to AND batch_id = @batchId AND item_key IS NOT NULL
      AND (status = 'CANCELLED' AND finished_at = @now AND last_error = @reason OR status = 'RUNNING' AND cancel_requested = 1)`,
  /** @owner @expires — returns the tokens the owner still holds. */
  /** @id @due @step — a waiting retry still due when its scheduler thought, moved by a step of its clock. */
  shiftRetry: "UPDATE tasks SET next_run_at = next_run_at + @step WHERE id = @id AND status = 'PENDING' AND next_run_at = @due",
  heartbeat: "UPDATE tasks INDEXED BY tasks_running SET lease_expires_at = @expires WHERE lease_owner = @owner AND status = 'RUNNING' RETURNING lease_token AS token",


  /** @batchId (NULL = every batch) */
  /** @batchId (NULL = every batch) @now — each owner's latest lease end, and whether that has passed at @now. */
  runningOwners: `
    SELECT lease_owner AS owner, max(lease_expires_at) AS lease_end, max(lease_expires_at) < @now AS expired FROM tasks
    WHERE status = 'RUNNING' AND lease_owner IS NOT NULL AND (@batchId IS NULL OR batch_id = @batchId)
    GROUP BY lease_owner`,
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
        next_run_at = @now, last_error = @error, busy_since = NULL,
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
   * @batchId — read from task_counts (migration 019): a row per stage and bucket, whatever the
   * batch's size. Shaped as the groups toCounts folds: RETRYING is PENDING tried, and QUEUED
   * both a RUNNING row and the QUEUED subset toCounts moves out of it (as PostgreSQL's).
   */
  counts: `
    SELECT ${KEPT_GROUP}, n
    FROM task_counts WHERE batch_id = @batchId
    UNION ALL
    SELECT 'QUEUED', 0, n FROM task_counts WHERE batch_id = @batchId AND bucket = 'QUEUED'`,
  /** @batchId — the learned durations of its tasks, read from their ranks (LEARNED_RANK = 2^50); tasks_by_state alone. */
  learnedWork: `    SELECT count(*) FILTER (WHERE status IN ('PENDING', 'RUNNING')) AS open_known,
      coalesce(sum(-order_rank - 1125899906842624) FILTER (WHERE status IN ('PENDING', 'RUNNING')), 0) AS open_ms,
      count(*) FILTER (WHERE status = 'SUCCESS') AS done_known,
      coalesce(sum(-order_rank - 1125899906842624) FILTER (WHERE status = 'SUCCESS'), 0) AS done_ms
    FROM tasks INDEXED BY tasks_by_state WHERE batch_id = @batchId AND order_rank <= -1125899906842624`,
  /** @batchId — an index lookup or two (tasks_by_state), whatever the batch's size. */
  progress: `SELECT EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_by_state WHERE batch_id = @batchId AND status IN ('PENDING', 'RUNNING')) AS open, last_finished_at AS last FROM batches WHERE id = @batchId`,
  /** ?batchId — only tasks whose needs are met: one waiting for a running need is not "due". */
  nextDue: `SELECT min(next_run_at) AS due FROM tasks AS c WHERE batch_id = ? AND status = 'PENDING' AND ${NEEDS_MET}`,
  /** ?batchId — the retry due last (served by tasks_by_state, read from its high end). */
  lastRetryDue: `SELECT next_run_at AS due FROM tasks INDEXED BY tasks_by_state WHERE batch_id = ? AND status = 'PENDING' AND attempts > 0 ORDER BY next_run_at DESC LIMIT 1`,
  /**
   * @batchId — per stage, for batches with stages (every task of such a batch is a stage task
   * of an item), read from task_counts as `counts` is, in stage order.
   */
  stageCounts: `
    SELECT stage, ${KEPT_GROUP}, n
    FROM task_counts WHERE batch_id = @batchId
    UNION ALL
    SELECT stage, 'QUEUED', 0, n FROM task_counts WHERE batch_id = @batchId AND bucket = 'QUEUED'
    ORDER BY stage`,
  /** @batchId @limit */
  failedErrors: `
    SELECT coalesce(last_error, '(no error recorded)') AS error, count(*) AS count, min(task_key) AS example FROM tasks
    WHERE batch_id = @batchId AND status = 'FAILED'
    GROUP BY error ORDER BY count DESC, error LIMIT @limit + 0`,
  /** ?batchId */
  activity: 'SELECT first_started_at AS first, last_finished_at AS last FROM batches WHERE id = ?',
  /** @batchId @status (NULL = any) @error (NULL = any; substring of last_error) @attempted (1 = attempts > 0) */
  listTasks: `
    SELECT * FROM tasks
    WHERE batch_id = @batchId AND (@status IS NULL OR status = @status) AND (@attempted IS NULL OR attempts > 0)
      AND (@error IS NULL OR instr(last_error, @error) > 0)
    ORDER BY id`,
  /**
   * @batchId @limit — RUNNING tasks, earliest started first. tasks_running holds only RUNNING
   * rows (of every batch: as many as there are worker slots), so the batch's other tasks are
   * never read; through tasks_by_state the OR-free filter would do too, but not every planner
   * picks it.
   */
  runningTasks: `
    SELECT * FROM tasks INDEXED BY tasks_running
    WHERE status = 'RUNNING' AND batch_id = @batchId AND queued = 0 ORDER BY started_at, id LIMIT @limit + 0`,
  /**
   * Same parameters as listTasks, and @from @to: the page of the tasks with ids in [@from,
   * @to], read by rowid (NOT INDEXED), so a page costs its range whatever the batch's size.
   */
  taskPage: `
    SELECT * FROM tasks NOT INDEXED
    WHERE id BETWEEN @from AND @to AND batch_id = @batchId AND (@status IS NULL OR status = @status)
      AND (@attempted IS NULL OR attempts > 0) AND (@error IS NULL OR instr(last_error, @error) > 0)
    ORDER BY id`,
  /** @batchId @status @attempted @from @to — a page of outcomes (`results`): five columns, in id order. */
  outcomePage: `
    SELECT task_key, stage, status, last_error, result FROM tasks NOT INDEXED
    WHERE id BETWEEN @from AND @to AND batch_id = @batchId AND (@status IS NULL OR status = @status) AND (@attempted IS NULL OR attempts > 0)
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
    WHERE t.batch_id = @batchId ORDER BY a.id DESC LIMIT @limit + 0`,
  /** ?batchId */
  batchAttemptCount: 'SELECT count(*) AS n FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE t.batch_id = ?',
  /** @before — batches with nothing PENDING or RUNNING whose last activity is older than @before. */
  finishedBatches: `
    SELECT b.* FROM batches b
    WHERE (@only IS NULL OR b.id = @only) AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.batch_id = b.id AND t.status IN ('PENDING', 'RUNNING'))
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
  /**
   * @batchId @from @to @afterTask @afterAttempt @n — one chunk of a pruned batch's attempts:
   * those of its tasks with ids in [@from, @to], after (@afterTask, @afterAttempt), the first
   * @n in (task, attempt) order; returns them with their log paths (see prune-in-chunks.ts).
   * The tasks of the range are read by rowid (NOT INDEXED) and come first (CROSS JOIN), then
   * each one's attempts through attempts_by_task: a chunk reads its range and its attempts,
   * never the rows that chunks before it deleted.
   */
  pruneAttempts: `
    DELETE FROM attempts WHERE id IN (
      SELECT a.id FROM tasks t NOT INDEXED CROSS JOIN attempts a ON a.task_id = t.id
      WHERE t.id BETWEEN @from AND @to AND t.id >= @afterTask AND t.batch_id = @batchId AND (a.task_id, a.id) > (@afterTask, @afterAttempt)
      ORDER BY t.id, a.id LIMIT @n + 0)
    RETURNING task_id, id, log_path AS path`,
  /** @batchId @from @to — the pruned batch's tasks with ids in [@from, @to] (their attempts are gone already), by rowid. */
  pruneTasks: 'DELETE FROM tasks NOT INDEXED WHERE id BETWEEN @from AND @to AND batch_id = @batchId',
  /** ?batchId — tasks and attempts go with it (ON DELETE CASCADE). */
  deleteBatch: 'DELETE FROM batches WHERE id = ?',
  historySize: 'SELECT count(*) AS n FROM attempts',
  /** ?source — the median duration of each key's successes in every batch of the source (--order history); a success that ran nothing (up to date, 0 ms) is none. */
  learnedDurations: `    SELECT stage, key, avg(ms) AS ms FROM (
      SELECT t.stage, t.task_key AS key, a.duration_ms AS ms,
        row_number() OVER (PARTITION BY t.stage, t.task_key ORDER BY a.duration_ms) AS r,
        count(*) OVER (PARTITION BY t.stage, t.task_key) AS c
      FROM batches AS b JOIN tasks AS t ON t.batch_id = b.id JOIN attempts AS a ON a.task_id = t.id
      WHERE b.source = ? AND a.outcome = 'SUCCESS' AND a.duration_ms > 0) AS d
    WHERE r IN ((c + 1) / 2, (c + 2) / 2)
    GROUP BY stage, key`,
  /** ?batchId ?key */
  /** ?batchId ?key ?stage (the key's first segment: a stage task's key starts with its stage) */
  taskByKey: "SELECT * FROM tasks WHERE batch_id = ? AND task_key = ? AND stage IN ('', ?)",
  /** ?taskId */
  attemptsOf: 'SELECT * FROM attempts WHERE task_id = ? ORDER BY id',
  /** ?id — a fresh retry budget; the attempts history is kept. */
  resetFailed: `
    UPDATE tasks SET status = 'PENDING', attempts = 0, earlier_attempts = earlier_attempts + attempts, next_run_at = 0, busy_since = NULL, finished_at = NULL, last_error = NULL
    WHERE id = ? AND status = 'FAILED'
    RETURNING item_key`,
} as const;

export type Statements = Record<keyof typeof SQL, Database.Statement>;

/**
 * Each statement is prepared the first time it is used, then kept: a command uses a few of
 * the sixty, and preparing them all took about 3 ms of every command's start-up.
 */
export function prepareStatements(db: Database.Database): Statements {
  const st: Partial<Statements> = {};
  for (const [name, sql] of Object.entries(SQL) as [keyof typeof SQL, string][]) {
    Object.defineProperty(st, name, {
      configurable: true,
      enumerable: true,
      get: () => {
        const prepared = db.prepare(sql);
        Object.defineProperty(st, name, { value: prepared, enumerable: true });
        return prepared;
      },
    });
  }
  return st as Statements;
}

