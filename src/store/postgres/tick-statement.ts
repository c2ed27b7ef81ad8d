import { SERVER_NOW } from './pg-clock.js';
import { fillLateEnds, finishedCte, reportsOf, settledCtes } from './settle-statements.js';

/**
 * The claim's CTEs (`retries`, `fresh`, `due`, `claimed`, `opened`), shared by the claim alone (claimTasks) and the
 * whole tick (tickStatement). `p(i)` names the claim's i-th parameter: 1 batchId, 2 now, 3 owner,
 * 4 leaseMs, 5 workerIds text[], 6 host, 7 pids int[], 9 leaseFrom (NULL: the server's clock),
 * 10 queued boolean[]; `jobVersion` is the attempts' job version (a parameter or the batch
 * row's), and `guard` a further condition on a due task ('' for none).
 *
 * Retries first: tasks whose retry came due (next_run_at in (0, now], a failure's backoff or a
 * lost attempt's release), earliest first, then never-tried ones (next_run_at 0) in the batch's
 * order: higher priority first, then lower order_rank (--order), then key order.
 * One ORDER BY next_run_at put every new task before any retry: in a batch of thousands a
 * 100 ms backoff waited minutes. Each part is a range of tasks_by_state in index order, limited
 * to the slots. The never-tried part is skipped when the retries fill every slot; when they
 * fill some, it locks up to that many rows it does not take until the statement commits
 * (another claimer skips to the next ones). Its LIMIT stays a known bound: one computed from
 * the retries made the planner cost a scan of the whole range (880,000 at a million tasks),
 * and PostgreSQL 15's JIT then compiled the statement, 2.5 s a claim on the test server.
 */
export function claimCtes(s: string, needsMet: string, p: (i: number) => string, jobVersion: string, guard = ''): string {
  return `
      retries AS (
        SELECT id, next_run_at, priority, order_rank, attempts FROM ${s}.tasks AS c
        WHERE batch_id = ${p(1)} AND status = 'PENDING' AND next_run_at > 0 AND next_run_at <= ${p(2)} AND attempts < max_attempts AND ${needsMet}${guard}
        ORDER BY next_run_at, priority DESC, order_rank, attempts, id LIMIT cardinality(${p(5)}::text[])
        FOR UPDATE SKIP LOCKED),
      fresh AS (
        SELECT id, next_run_at, priority, order_rank, attempts FROM ${s}.tasks AS c
        WHERE batch_id = ${p(1)} AND status = 'PENDING' AND next_run_at = 0 AND attempts < max_attempts AND ${needsMet}${guard}
          AND (SELECT count(*) FROM retries) < cardinality(${p(5)}::text[])
        ORDER BY priority DESC, order_rank, attempts, id LIMIT cardinality(${p(5)}::text[])
        FOR UPDATE SKIP LOCKED),
      due AS (
        SELECT id, n, nextval(pg_get_serial_sequence('${s}.attempts', 'id')) AS token FROM (
          SELECT id, row_number() OVER (ORDER BY f, next_run_at, priority DESC, order_rank, attempts, id) AS n FROM (
            SELECT 0 AS f, * FROM retries UNION ALL SELECT 1, * FROM fresh
            ORDER BY f, next_run_at, priority DESC, order_rank, attempts, id LIMIT cardinality(${p(5)}::text[])) AS locked) AS ranked
        ORDER BY n),
      claimed AS (
        UPDATE ${s}.tasks AS t
        SET status = 'RUNNING', attempts = t.attempts + 1, lease_owner = ${p(3)}, lease_expires_at = coalesce(${p(9)}::bigint, ${SERVER_NOW}) + ${p(4)}::bigint,
            worker_id = (${p(5)}::text[])[due.n::int], started_at = ${p(2)}, lease_token = due.token, queued = (${p(10)}::boolean[])[due.n::int]
        FROM due WHERE t.id = due.id
        RETURNING t.id, t.batch_id, t.task_key, t.stage, t.item_key, t.needs, t.seq, t.attempts, t.earlier_attempts, t.max_attempts, t.payload, t.worker_id, t.lease_token, t.busy_since, coalesce(t.rate_key, '') AS rate_key, due.n),
      opened AS (
        INSERT INTO ${s}.attempts (id, task_id, attempt, worker_id, host, pid, owner, started_at, job_version)
        SELECT lease_token, id, attempts + earlier_attempts, worker_id, ${p(6)}, (${p(7)}::int[])[n::int], ${p(3)}, ${p(2)}, ${jobVersion} FROM claimed ORDER BY n)`;
}

/** A due task (alias `c`) whose --rate-key gate is open at the claim's time, `p(2)` (a task without a key counts as the key ''). */
export function keyGateOpen(s: string, p: (i: number) => string): string {
  return ` AND NOT EXISTS (SELECT 1 FROM ${s}.rate_key_gates AS g WHERE g.batch_id = c.batch_id AND g.rate_key = coalesce(c.rate_key, '') AND g.next_at > ${p(2)})`;
}

/**
 * A PENDING task (alias `c`) whose needs all succeeded for its item, each with its declared
 * output in place (output_temp cleared); a task without needs passes at once. Part of the
 * claim itself, so no race can start a stage early. `settledNow`: the ids of tasks the same
 * statement settled so (its snapshot still shows them RUNNING).
 */
export function needsMetIn(s: string, settledNow?: string): string {
  const met = `d.status = 'SUCCESS' AND d.output_temp IS NULL`;
  return `(c.needs IS NULL OR jsonb_array_length(c.needs::jsonb) = (
    SELECT count(*) FROM ${s}.tasks AS d
    WHERE d.batch_id = c.batch_id AND d.item_key = c.item_key AND ${settledNow ? `((${met}) OR d.id IN ${settledNow})` : met}
      AND d.stage IN (SELECT jsonb_array_elements_text(c.needs::jsonb))))`;
}

/**
 * Marks queued attempts started, from `j` (id, token, at) among the task ids `locked` holds:
 * fenced, so a task taken over or settled meanwhile is left alone (markRunning, tickStatement).
 */
export function startsMarked(s: string): string {
  return `UPDATE ${s}.tasks AS t SET queued = false, started_at = j.at
      FROM j WHERE t.id = j.id AND t.id IN (SELECT id FROM locked) AND t.status = 'RUNNING' AND t.lease_token = j.token`;
}

/** Offset of the claim's parameters in tickStatement: after the settle's 15, the late notes and the starts' 3. */
const CLAIM_AT = 19;

/**
 * A whole tick of successes in one statement, committed on its own (no BEGIN, no COMMIT): the
 * reports settled and their attempt rows closed, fenced-off reports of LOST attempts filled
 * in, queued attempts that started marked, the batch marked started, and the claim for the
 * free slots, under the batch's job version read FOR KEY SHARE (as claimVersion). Where a tick
 * used five round trips or more, the server parses, plans and commits one.
 *
 * $1–$15 the settle's (settleTasks), $16 notes text[] (the late-report note of each report,
 * used where its token no longer holds the task), $17–$19 the starts (markRunning's, minus
 * the tasks settled here: their ends are what counts), $20–$29 the claim's (claimTasks' $1–$10,
 * $27 being the expected job version: NULL for any). Task rows are locked in id order first,
 * the settled and started ones together, as every multi-row writer does. Returns one row at
 * least: `applied` (the tokens that still held their tasks) and `applied_status` (the status
 * each left its task in, in the same order), on the first row only (on every row, a tick of
 * a thousand settled and a thousand claimed tasks sent a million tokens twice, and parsing
 * them stalled the coordinator past the connection's timeout), and, per claimed task, its row and
 * `inputs` (the results of the stages it needs, as the `inputs` statement reads them, a need
 * settled here with the result it was settled with).
 */
export function tickStatement(s: string): string {
  const p = (i: number) => `$${CLAIM_AT + i}`;
  // A need settled by this very statement counts as met, as it would for a claim after the settle.
  const needsMet = needsMetIn(s, `(SELECT id FROM settled WHERE status = 'SUCCESS' AND output_temp IS NULL)`);
  return `
      WITH r AS MATERIALIZED (SELECT * FROM ${reportsOf(true)}),
      j AS MATERIALIZED (SELECT * FROM unnest($17::bigint[], $18::bigint[], $19::bigint[]) AS j(id, token, at) WHERE j.id <> ALL($1::bigint[])),
      locked AS MATERIALIZED (SELECT id FROM ${s}.tasks WHERE id = ANY($1::bigint[] || $17::bigint[]) ORDER BY id FOR UPDATE),
      ${settledCtes(s, '(SELECT id FROM locked)')},
      ${finishedCte(s)},
      late AS (${fillLateEnds(
        s,
        `(SELECT token AS id, ended_at, duration_ms, exit_code, signal, note, output_tail, log_path, started_at
          FROM r WHERE token NOT IN (SELECT token FROM settled)) AS e`,
      )}),
      started AS (${startsMarked(s)}),
      v AS (SELECT job_version FROM ${s}.batches WHERE id = ${p(1)} FOR KEY SHARE),
      mark AS (UPDATE ${s}.batches SET first_started_at = ${p(2)} WHERE id = ${p(1)} AND first_started_at IS NULL AND cardinality(${p(5)}::text[]) > 0),
      ${claimCtes(s, needsMet, p, '(SELECT job_version FROM v)', ` AND EXISTS (SELECT 1 FROM v WHERE ${p(8)}::int IS NULL OR v.job_version = ${p(8)}::int)`)}
      SELECT a.applied, a.applied_status, c.*,
        CASE WHEN c.needs IS NOT NULL AND c.item_key IS NOT NULL THEN (
          SELECT coalesce(json_agg(json_build_object('stage', d.stage, 'result', CASE WHEN fresh.id IS NULL THEN d.result ELSE fresh.result END)), '[]')
          FROM ${s}.tasks AS d LEFT JOIN settled AS fresh ON fresh.id = d.id
          WHERE d.batch_id = c.batch_id AND d.item_key = c.item_key AND d.stage IN (SELECT jsonb_array_elements_text(c.needs::jsonb))) END AS inputs
      FROM (SELECT 1) AS one LEFT JOIN claimed AS c ON true
        LEFT JOIN (SELECT coalesce(array_agg(token ORDER BY token), '{}') AS applied, coalesce(array_agg(status ORDER BY token), '{}') AS applied_status FROM settled) AS a
          ON c.n IS NOT DISTINCT FROM (SELECT min(n) FROM claimed)
      ORDER BY c.n`;
}
