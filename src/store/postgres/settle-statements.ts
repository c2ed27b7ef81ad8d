/**
 * The settle verb's statements: each settles a whole tick's reports in one round trip,
 * whatever their number (arrays unnested in the order given). Split from statements.ts,
 * which holds the rest; `s` is the store's quoted schema.
 */
export function settleStatements(s: string) {
  return {
    /**
     * $1 taskIds $2 tokens $3 outcomes $4 endedAts $5 errors $6 results $7 retryAts $8 startedAts
     * (NULL: the claim's; an attempt that waited queued on its slot started later) $9 exitCodes
     * $10 signals $11 durations $12 outputTails $13 logPaths $14 upToDates (SUCCESS: nothing ran) $15 outputTemps (SUCCESS: the declared
     * output's temporary file, renamed once this commit won) — a tick in one statement: the
     * tasks, their attempt rows, and each batch's latest finish (not INTERRUPTED) in this
     * session's own lane (migration 006: no row every coordinator of a batch updates). The lane
     * is the backend's pid itself: folded to 64 lanes, as first written, sessions of a fleet
     * shared lanes, and at 64 simulated hosts settles queued on those rows (docs/postgres-fleet.md).
     * Fenced: a task changes only while its token still holds it. Task rows are locked in id
     * order first, as every multi-row writer does, so two writers never deadlock. SUCCESS ends
     * the task; a failure retries at retryAt while attempts remain (NULL: permanent);
     * INTERRUPTED is not charged; BUSY is not charged and waits until retryAt, keeping when its
     * busy streak began (busy_since; any other outcome but INTERRUPTED clears it); a task
     * `cancel` asked to stop ends CANCELLED instead.
     */
    settleTasks: `
      WITH r AS MATERIALIZED (SELECT * FROM ${reportsOf()}),
      ${settledCtes(s, `(SELECT id FROM ${s}.tasks WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE)`)},
      ${finishedCte(s)}
      SELECT token, batch_id, status, item_key FROM settled`,
    /**
     * $1 tokens $2 endedAts $3 durations $4 exitCodes $5 signals $6 notes $7 tails $8 logPaths
     * $9 startedAts — the late, fenced-off reports of attempts recorded LOST: each real end fills
     * in the unknown one (the outcome stays LOST, the report is noted in the error). Once only.
     */
    lateEnds: fillLateEnds(
      s,
      `unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[])
        AS e(id, ended_at, duration_ms, exit_code, signal, note, output_tail, log_path, started_at)`,
    ),
  };
}

/**
 * The reports of one tick, one row each (alias `r`): settleTasks' parameters $1–$15, and with
 * `note` a 16th, $16 text[] (tickStatement's late-report notes).
 */
export function reportsOf(note = false): string {
  return `unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::bigint[], $8::bigint[],
        $9::int[], $10::text[], $11::bigint[], $12::text[], $13::text[], $14::boolean[], $15::text[]${note ? ', $16::text[]' : ''})
        AS r(id, token, outcome, ended_at, error, result, retry_at, started_at, exit_code, signal, duration_ms, output_tail, log_path, up_to_date, output_temp${note ? ', note' : ''})`;
}

/**
 * The settle's CTEs over the reports `r`: `settled` (the tasks whose token still holds them,
 * among the ids `locked` selects, locked in id order) and `ended` (their attempt rows).
 */
export function settledCtes(s: string, locked: string): string {
  const failed = `r.outcome NOT IN ('SUCCESS', 'INTERRUPTED')`;
  const retries = `${failed} AND NOT t.cancel_requested AND r.retry_at IS NOT NULL AND t.attempts < t.max_attempts`;
  return `settled AS (
        UPDATE ${s}.tasks AS t SET
          status = CASE WHEN r.outcome = 'SUCCESS' THEN 'SUCCESS' WHEN t.cancel_requested THEN 'CANCELLED'
                        WHEN r.outcome IN ('INTERRUPTED', 'BUSY') OR (${retries}) THEN 'PENDING' ELSE 'FAILED' END,
          result = CASE WHEN r.outcome = 'SUCCESS' THEN r.result ELSE t.result END,
          up_to_date = CASE WHEN r.outcome = 'SUCCESS' THEN r.up_to_date ELSE t.up_to_date END,
          output_temp = CASE WHEN r.outcome = 'SUCCESS' THEN r.output_temp ELSE t.output_temp END,
          finished_at = CASE WHEN r.outcome IN ('INTERRUPTED', 'BUSY') AND NOT t.cancel_requested THEN t.finished_at
                             WHEN ${retries} THEN NULL ELSE r.ended_at END,
          next_run_at = CASE WHEN ${failed} THEN coalesce(r.retry_at, t.next_run_at) ELSE t.next_run_at END,
          last_error = CASE WHEN r.outcome = 'SUCCESS' THEN r.error
                            WHEN r.outcome = 'INTERRUPTED' THEN CASE WHEN t.cancel_requested THEN 'cancelled' ELSE t.last_error END
                            WHEN t.cancel_requested THEN 'cancelled; its last attempt: ' || r.error ELSE r.error END,
          started_at = CASE WHEN r.outcome = 'INTERRUPTED' THEN t.started_at ELSE coalesce(r.started_at, t.started_at) END,
          attempts = CASE WHEN r.outcome IN ('INTERRUPTED', 'BUSY') THEN t.attempts - 1 ELSE t.attempts END,
          earlier_attempts = CASE WHEN r.outcome = 'BUSY' THEN t.earlier_attempts + 1 ELSE t.earlier_attempts END,
          busy_since = CASE WHEN r.outcome = 'BUSY' THEN coalesce(t.busy_since, r.started_at, t.started_at) WHEN r.outcome = 'INTERRUPTED' THEN t.busy_since END,
          cancel_requested = CASE WHEN r.outcome = 'SUCCESS' THEN false ELSE t.cancel_requested END,
          lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
        FROM r
        WHERE t.id = r.id AND t.status = 'RUNNING' AND t.lease_token = r.token
          AND t.id IN ${locked}
        RETURNING r.token, r.outcome, r.ended_at, t.id, t.batch_id, t.status, t.item_key, t.output_temp, t.result),
      ended AS (
        UPDATE ${s}.attempts AS a
        SET ended_at = r.ended_at, outcome = r.outcome, exit_code = r.exit_code, signal = r.signal, error = r.error,
            duration_ms = r.duration_ms, output_tail = r.output_tail, log_path = r.log_path,
            started_at = coalesce(r.started_at, a.started_at)
        FROM settled JOIN r ON r.token = settled.token
        WHERE a.id = settled.token AND a.outcome IS NULL)`;
}

/**
 * Fills in the real ends of attempts recorded LOST from the late reports `from` (alias `e`:
 * id, ended_at, duration_ms, exit_code, signal, note, output_tail, log_path, started_at),
 * once only: the outcome stays LOST and the report is noted in the error (lateEnds, tickStatement).
 */
export function fillLateEnds(s: string, from: string): string {
  return `UPDATE ${s}.attempts AS a
      SET ended_at = e.ended_at, duration_ms = e.duration_ms, exit_code = e.exit_code, signal = e.signal,
          error = a.error || e.note, output_tail = e.output_tail, log_path = e.log_path,
          started_at = coalesce(e.started_at, a.started_at)
      FROM ${from}
      WHERE a.id = e.id AND a.outcome = 'LOST' AND a.ended_at IS NULL`;
}

/** Each batch's latest finish among the settled (not INTERRUPTED), in this session's lane (see settleTasks). */
export function finishedCte(s: string): string {
  return `finished AS (
        INSERT INTO ${s}.batch_finishes AS f (batch_id, lane, last_finished_at)
        SELECT batch_id, pg_backend_pid(), max(ended_at) FROM settled WHERE outcome <> 'INTERRUPTED'
        GROUP BY batch_id ORDER BY batch_id
        ON CONFLICT (batch_id, lane) DO UPDATE SET last_finished_at = excluded.last_finished_at
        WHERE f.last_finished_at < excluded.last_finished_at)`;
}

/** A batch's latest finish (`b` its row): the batch row's (before migration 006) or the greatest lane's. */
export function lastFinishedOf(s: string): string {
  return `greatest(b.last_finished_at, (SELECT max(f.last_finished_at) FROM ${s}.batch_finishes AS f WHERE f.batch_id = b.id))`;
}
