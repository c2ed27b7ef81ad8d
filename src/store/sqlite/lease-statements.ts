/**
 * The statements of a coordinator's tick (claim, settle) and of the stage cascade. Each
 * handles a whole group in one statement: the group arrives as one JSON list, read in a
 * MATERIALIZED CTE so every row is found by its primary key whatever statistics an ANALYZE
 * left (without it a plan can scan the table). Per-row statements cost about 2.5× as much
 * per task. Lists of rows are read with jsonb_each: its elements stay binary for `->>`,
 * where json_each turns each back into text to be parsed again (half the JSON cost).
 *
 * A LIMIT is written `LIMIT @n + 0`: SQLite 3.53 reads a bare bound LIMIT while planning,
 * so every new value re-prepared the statement (≈ 35 µs of a 40 µs claim).
 */

/**
 * A PENDING task (alias `c`) whose needs all succeeded for its item, each with its declared
 * output in place (output_temp cleared); a task without needs passes at once. Part of the
 * claim itself, so no race can start a stage early.
 */
export const NEEDS_MET = `(c.needs IS NULL OR json_array_length(c.needs) = (
  SELECT count(*) FROM tasks AS d INDEXED BY tasks_by_item
  WHERE d.batch_id = c.batch_id AND d.item_key = c.item_key AND d.status = 'SUCCESS' AND d.output_temp IS NULL
    AND d.stage IN (SELECT value FROM json_each(c.needs))))`;

/** What a claim hands back: what a worker needs, no more (RETURNING * costs as much as the update). */
const CLAIMED = 'id, batch_id, task_key, stage, item_key, needs, seq, payload, attempts, earlier_attempts, max_attempts, worker_id, lease_token, busy_since';

/** A due task (alias `c`) whose --rate-key gate is open at @now (a task without a key counts as the key ''). */
const KEY_GATE_OPEN = `
            AND NOT EXISTS (SELECT 1 FROM rate_key_gates AS g WHERE g.batch_id = @batchId AND g.rate_key = coalesce(c.rate_key, '') AND g.next_at > @now)`;

/** The claim (claimTasks, below), with `guard` a further condition on a due task and `returning` more columns. */
function claimTasks(guard: string, returning: string): string {
  return `
    WITH due AS MATERIALIZED (
      SELECT id, row_number() OVER (ORDER BY fresh, next_run_at, priority DESC, order_rank, attempts, id) - 1 AS i FROM (
        SELECT * FROM (
          SELECT 0 AS fresh, id, next_run_at, priority, order_rank, attempts FROM tasks AS c INDEXED BY tasks_by_state
          WHERE batch_id = @batchId AND status = 'PENDING' AND next_run_at > 0 AND next_run_at <= @now AND attempts < max_attempts
            AND ${NEEDS_MET}${guard}
          ORDER BY next_run_at, priority DESC, order_rank, attempts, id LIMIT @n + 0)
        UNION ALL
        SELECT * FROM (
          SELECT 1 AS fresh, id, next_run_at, priority, order_rank, attempts FROM tasks AS c INDEXED BY tasks_by_state
          WHERE batch_id = @batchId AND status = 'PENDING' AND next_run_at = 0 AND attempts < max_attempts
            AND ${NEEDS_MET}${guard}
          ORDER BY priority DESC, order_rank, attempts, id LIMIT @n + 0)
        ORDER BY fresh, next_run_at, priority DESC, order_rank, attempts, id LIMIT @n + 0))
    UPDATE tasks
    SET status = 'RUNNING', attempts = attempts + 1, lease_owner = @owner, lease_expires_at = @expires,
        worker_id = @workers ->> due.i, started_at = @now, lease_token = @first + due.i, queued = @queued ->> due.i
    FROM due
    WHERE tasks.id = due.id
    RETURNING ${CLAIMED}${returning}`;
}

export const LEASE_SQL = {
  /**
   * ?batchId — the batch's job version, and the id the next attempt row will get: above every
   * attempt id the store ever had, pruned ones included (id_high_water), as it is the fencing
   * token. Read in the claim's write transaction, so no updateJob lands between check and claim.
   */
  claimHead: `
    SELECT job_version, max(coalesce((SELECT max(id) FROM attempts), 0), (SELECT attempts FROM id_high_water)) + 1 AS first
    FROM batches WHERE id = ?`,
  /**
   * @batchId @now @n @owner @expires @workers (JSON array, one id per slot) @queued (JSON
   * array, 1 for a slot's place behind the attempt it runs) @first — claims
   * the first @n due PENDING tasks whose needs all succeeded, and counts the attempt in the
   * same statement (a claim is an attempt). The i-th of them (from 0) goes to slot i with
   * token @first + i, the id its attempt row will get (the claim transaction is the only
   * writer, so ids from @first on are free).
   *
   * Retries first: tasks whose retry came due (next_run_at in (0, @now], set by a failure's
   * backoff or a lost attempt's release), earliest first, then never-tried ones (next_run_at
   * 0) in the batch's order: higher priority first, then lower order_rank (--order), then key
   * order. One ORDER BY next_run_at put every new task (0) before any retry: in a batch of
   * thousands a 100 ms backoff waited minutes. Each part is a range of tasks_by_state read in
   * index order up to @n rows, so a claim reads at most 2 @n index entries past the ones
   * whose needs are not met, whatever the batch's size.
   */
  claimTasks: claimTasks('', ''),
  /**
   * The same for --rate-key (ClaimRequest.keyed): only tasks whose key's gate is open at @now;
   * a keyed claim takes one task a statement, then moves its key's gate (moveKeyGate).
   */
  claimKeyed: claimTasks(KEY_GATE_OPEN, ', coalesce(rate_key, \'\') AS rate_key'),
  /** @list (JSON [[token, taskId, attempt, workerId, pid], …]) @host @owner @now @jobVersion — the claimed attempts' rows. */
  openAttempts: `
    INSERT INTO attempts (id, task_id, attempt, worker_id, host, pid, owner, started_at, job_version)
    SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, @host, value ->> 4, @owner, @now, @jobVersion
    FROM jsonb_each(@list)`,
  /**
   * @list (JSON [[taskId, token, at], …]) — queued attempts that started: their tasks run from
   * `at` (fenced: a task taken over or settled meanwhile is left alone).
   */
  markRunning: `
    WITH j AS MATERIALIZED (SELECT value ->> 0 AS id, value ->> 1 AS token, value ->> 2 AS at FROM jsonb_each(@list))
    UPDATE tasks SET queued = 0, started_at = j.at
    FROM j WHERE tasks.id = j.id AND tasks.status = 'RUNNING' AND tasks.lease_token = j.token`,
  /** @batchId @now */
  markStarted: 'UPDATE batches SET first_started_at = @now WHERE id = @batchId AND first_started_at IS NULL',
  /**
   * @batchId @list (JSON [[taskId, item, needs], …]) — the stored results of the stages the
   * listed stage tasks need, one row per task and needed stage.
   */
  inputs: `
    WITH j AS MATERIALIZED (SELECT value ->> 0 AS id, value ->> 1 AS item, value ->> 2 AS needs FROM jsonb_each(@list))
    SELECT j.id AS task_id, t.stage, t.result FROM j JOIN tasks AS t INDEXED BY tasks_by_item
      ON t.batch_id = @batchId AND t.item_key = j.item AND t.stage IN (SELECT value FROM json_each(j.needs))`,

  /** @batchId @key — a --rate-key gate's next start, or none yet. */
  keyGate: 'SELECT next_at FROM rate_key_gates WHERE batch_id = @batchId AND rate_key = @key',
  /** @batchId @key @next — moves a --rate-key gate on (makes it at its first start). */
  moveKeyGate: 'INSERT INTO rate_key_gates (batch_id, rate_key, next_at) VALUES (@batchId, @key, @next) ON CONFLICT (batch_id, rate_key) DO UPDATE SET next_at = excluded.next_at',
  /** @batchId @now — when the batch's next closed --rate-key gate opens, if any is closed. */
  nextKeyGate: 'SELECT min(next_at) AS at FROM rate_key_gates WHERE batch_id = @batchId AND next_at > @now',
  /** ?ids (JSON array of task ids) — the tokens holding them now (for a settle listing a task twice). */
  holders: `
    WITH j AS MATERIALIZED (SELECT value AS id FROM json_each(?))
    SELECT tasks.lease_token AS token FROM j JOIN tasks ON tasks.id = j.id WHERE tasks.status = 'RUNNING'`,
  /**
   * @list (JSON [[taskId, token, outcome, endedAt, error, retryAt, result, keepResult, startedAt, upToDate, outputTemp], …]) —
   * every outcome in one statement, each fenced: a task changes only while the token still
   * holds it. SUCCESS ends the task; INTERRUPTED returns it uncharged; BUSY returns it uncharged
   * to wait until retryAt, and keeps when its busy streak began (busy_since: its first busy
   * attempt's start; any other outcome but INTERRUPTED clears it); any other outcome
   * retries it when retryAt is set and attempts remain, else fails it. A task `cancel` asked
   * to stop ends CANCELLED unless it succeeded. keepResult: the result was written already
   * (putResult). startedAt: when the attempt really started, if it waited queued on its slot
   * (NULL: the claim's), so a task's time is its last attempt's. SET expressions read the row
   * as it was, so the CASEs see the old status.
   */
  settleTasks: `
    WITH j AS MATERIALIZED (
      SELECT value ->> 0 AS id, value ->> 1 AS token, value ->> 2 AS outcome, value ->> 3 AS ended, value ->> 4 AS error,
             value ->> 5 AS retry, value ->> 6 AS result, value ->> 7 AS keep, value ->> 8 AS started, value ->> 9 AS fresh,
             value ->> 10 AS temp
      FROM jsonb_each(@list))
    UPDATE tasks
    SET status = CASE
          WHEN j.outcome = 'SUCCESS' THEN 'SUCCESS'
          WHEN cancel_requested THEN 'CANCELLED'
          WHEN j.outcome IN ('INTERRUPTED', 'BUSY') OR (j.retry IS NOT NULL AND attempts < max_attempts) THEN 'PENDING'
          ELSE 'FAILED' END,
        finished_at = CASE
          WHEN j.outcome = 'SUCCESS' OR cancel_requested THEN j.ended
          WHEN j.outcome IN ('INTERRUPTED', 'BUSY') THEN finished_at
          WHEN j.retry IS NOT NULL AND attempts < max_attempts THEN NULL
          ELSE j.ended END,
        next_run_at = CASE WHEN j.outcome IN ('SUCCESS', 'INTERRUPTED') THEN next_run_at ELSE coalesce(j.retry, next_run_at) END,
        last_error = CASE
          WHEN j.outcome = 'SUCCESS' THEN j.error
          WHEN j.outcome = 'INTERRUPTED' THEN CASE WHEN cancel_requested THEN 'cancelled' ELSE last_error END
          WHEN cancel_requested THEN 'cancelled; its last attempt: ' || j.error
          ELSE j.error END,
        result = CASE WHEN j.outcome = 'SUCCESS' AND NOT j.keep THEN j.result ELSE tasks.result END,
        up_to_date = CASE WHEN j.outcome = 'SUCCESS' THEN j.fresh ELSE up_to_date END,
        output_temp = CASE WHEN j.outcome = 'SUCCESS' THEN j.temp ELSE output_temp END,
        attempts = attempts - (j.outcome IN ('INTERRUPTED', 'BUSY')),
        -- A busy attempt ran: it keeps its number (attempts + earlier_attempts never goes back), not the budget.
        earlier_attempts = earlier_attempts + (j.outcome = 'BUSY'),
        busy_since = CASE WHEN j.outcome = 'BUSY' THEN coalesce(busy_since, j.started, started_at) WHEN j.outcome = 'INTERRUPTED' THEN busy_since END,
        cancel_requested = CASE WHEN j.outcome = 'SUCCESS' THEN 0 ELSE cancel_requested END,
        started_at = CASE WHEN j.outcome = 'INTERRUPTED' THEN started_at ELSE coalesce(j.started, started_at) END,
        lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
    FROM j
    WHERE tasks.id = j.id AND tasks.status = 'RUNNING' AND tasks.lease_token = j.token
    RETURNING id, batch_id, status, item_key`,
  /** ?batchId — committed successes whose declared output's rename is not confirmed (migration 012). */
  pendingOutputs: "SELECT id, batch_id, task_key, output_temp, result FROM tasks WHERE batch_id = ? AND output_temp IS NOT NULL AND status = 'SUCCESS' ORDER BY id",
  /** The same in every batch of the store (read through the partial index of migration 012). */
  allPendingOutputs: "SELECT id, batch_id, task_key, output_temp, result FROM tasks WHERE output_temp IS NOT NULL AND status = 'SUCCESS' ORDER BY id",
  /** @list (JSON [[taskId, temp], …]) — their outputs are in place (only while that temp is still the recorded one). */
  outputsPlaced: `
    WITH j AS MATERIALIZED (SELECT value ->> 0 AS id, value ->> 1 AS temp FROM jsonb_each(@list))
    UPDATE tasks SET output_temp = NULL FROM j WHERE tasks.id = j.id AND tasks.output_temp = j.temp`,
  /** @taskId @token @result — a result too large for a group's list, written first on its own (fenced). */
  putResult: "UPDATE tasks SET result = @result WHERE id = @taskId AND status = 'RUNNING' AND lease_token = @token",
  /**
   * @list (JSON [[token, held, outcome, endedAt, exitCode, signal, error, durationMs, outputTail, logPath, startedAt, note], …])
   * — the attempt rows: a held one gets its outcome (once: its outcome is NULL until then); a
   * fenced-off one recorded LOST keeps that outcome and gets its real end and the note of the
   * late report (once: a LOST end is NULL until then). startedAt NULL: the claim's.
   */
  settleAttempts: `
    WITH j AS MATERIALIZED (
      SELECT value ->> 0 AS id, value ->> 1 AS held, value ->> 2 AS outcome, value ->> 3 AS ended, value ->> 4 AS code,
             value ->> 5 AS signal, value ->> 6 AS error, value ->> 7 AS duration, value ->> 8 AS tail, value ->> 9 AS log,
             value ->> 10 AS started, value ->> 11 AS note
      FROM jsonb_each(@list))
    UPDATE attempts
    SET ended_at = j.ended, outcome = CASE WHEN j.held THEN j.outcome ELSE attempts.outcome END, exit_code = j.code,
        signal = j.signal, error = CASE WHEN j.held THEN j.error ELSE attempts.error || j.note END, duration_ms = j.duration,
        output_tail = j.tail, log_path = j.log, started_at = coalesce(j.started, attempts.started_at)
    FROM j
    WHERE attempts.id = j.id
      AND CASE WHEN j.held THEN attempts.outcome IS NULL ELSE attempts.outcome = 'LOST' AND attempts.ended_at IS NULL END`,
  /** @batchId @endedAt — the batch's last activity: every committed outcome except INTERRUPTED. */
  markFinished: `
    UPDATE batches SET last_finished_at = @endedAt
    WHERE id = @batchId AND (last_finished_at IS NULL OR last_finished_at < @endedAt)`,

  /** @batchId @items (JSON array) — every stage task of the listed items. */
  siblings: `
    SELECT item_key, id, stage, status, needs, last_error FROM tasks INDEXED BY tasks_by_item
    WHERE batch_id = @batchId AND item_key IN (SELECT value FROM json_each(@items))`,
  /** @list (JSON [[taskId, reason], …]) @now — dependents whose need failed or was cancelled. */
  cancelPending: `
    WITH j AS MATERIALIZED (SELECT value ->> 0 AS id, value ->> 1 AS reason FROM jsonb_each(@list))
    UPDATE tasks SET status = 'CANCELLED', last_error = j.reason, finished_at = @now
    FROM j
    WHERE tasks.id = j.id AND tasks.status = 'PENDING'`,
  /** ?ids (JSON array) — dependents whose need was reset by retry-failed. */
  revive: `
    WITH j AS MATERIALIZED (SELECT value AS id FROM json_each(?))
    UPDATE tasks SET status = 'PENDING', finished_at = NULL, last_error = NULL, next_run_at = 0
    FROM j
    WHERE tasks.id = j.id AND tasks.status = 'CANCELLED'`,
} as const;
