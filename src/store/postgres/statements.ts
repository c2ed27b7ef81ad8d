import { SERVER_NOW } from './pg-clock.js';
import type { Statement } from './pg-db.js';
import { enqueueStatements } from './enqueue-statements.js';
import { hookStatements } from './hook-statements.js';
import { reportStatements } from './report-statements.js';
import { settleStatements } from './settle-statements.js';
import { claimCtes, keyGateOpen, needsMetIn, startsMarked, tickStatement } from './tick-statement.js';

/**
 * The PostgreSQL store's named statements, prepared once per pooled connection and named like
 * their SQLite twins: the batch, lease and recovery statements here, the rest from one file per
 * concern (enqueue-statements.ts, settle-statements.ts, tick-statement.ts, report-statements.ts)
 * merged into one set. Each one's comment lists its positional parameters. Tables are
 * qualified with the store's schema (`s`, a validated plain identifier), so no connection state
 * such as search_path is needed. (A few statements are built where they run instead: the task
 * list's cursor in pg-list.ts, the migrations in migrate.ts.)
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
    /** $1 batchId $2 owner $3 level $4 max $5 pace $6 now — an owner's --adaptive level, made or refreshed. */
    publishLevel: `
      INSERT INTO ${s}.adaptive_levels (batch_id, owner, level, max_level, pace, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
      ON CONFLICT (batch_id, owner) DO UPDATE SET level = excluded.level, max_level = excluded.max_level, pace = excluded.pace, updated_at = excluded.updated_at`,
    /** $1 batchId $2 owner */
    dropLevel: `DELETE FROM ${s}.adaptive_levels WHERE batch_id = $1 AND owner = $2`,
    /** $1 batchId $2 since */
    adaptiveLevels: `SELECT owner, level, max_level, pace, updated_at FROM ${s}.adaptive_levels WHERE batch_id = $1 AND updated_at >= $2 ORDER BY level DESC, owner`,
    /** $1 batchId — makes the batch's rate gate (--rate) if it has none yet; then rateGate locks it. */
    makeRateGate: `INSERT INTO ${s}.rate_gates (batch_id, next_at) VALUES ($1, 0) ON CONFLICT (batch_id) DO NOTHING`,
    /** $1 batchId */
    rateGate: `SELECT next_at FROM ${s}.rate_gates WHERE batch_id = $1 FOR UPDATE`,
    /** $1 batchId $2 next */
    moveRateGate: `UPDATE ${s}.rate_gates SET next_at = $2 WHERE batch_id = $1`,
    /**
     * $1 batchId $2 patch $3 now — the fields of the patch (JSON) set in the batch's stored
     * definition, the rest as it is now, without a new version: what \`set\` changes (order,
     * priority) no attempt runs by.
     */
    setOptions: `UPDATE ${s}.batches SET job = (job::jsonb || $2::jsonb)::text, updated_at = $3 WHERE id = $1`,
    /** $1 batchId $2 ids bigint[] $3 priorities int[] $4 ranks bigint[] — new claim ranks for tasks of the batch that still wait. */
    rerank: `
      UPDATE ${s}.tasks AS t SET priority = j.priority, order_rank = j.rank
      FROM unnest($2::bigint[], $3::int[], $4::bigint[]) AS j (id, priority, rank)
      WHERE t.id = j.id AND t.batch_id = $1 AND t.status = 'PENDING' AND (t.priority <> j.priority OR t.order_rank <> j.rank)
        -- Locked in id order first, as every multi-row writer does, so it never deadlocks with a settle.
        AND t.id IN (SELECT id FROM ${s}.tasks WHERE id = ANY($2::bigint[]) ORDER BY id FOR UPDATE)`,
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
    ...enqueueStatements(s),
    ...hookStatements(s),

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
    /**
     * The same for --rate-key (ClaimRequest.keyed), one slot a statement: only tasks whose
     * key's gate is open at $2. The claimer holds the batch's rate gate row (rateGate) first,
     * so claimers of the batch on every host take key gates one at a time.
     */
    claimKeyed: `
      WITH ${claimCtes(s, needsMet, (i) => `$${i}`, '$8', keyGateOpen(s, (i) => `$${i}`))}
      SELECT * FROM claimed ORDER BY n`,
    /** $1 batchId $2 key — a --rate-key gate's next start, or none yet. */
    keyGate: `SELECT next_at FROM ${s}.rate_key_gates WHERE batch_id = $1 AND rate_key = $2`,
    /** $1 batchId $2 key $3 next — moves a --rate-key gate on (makes it at its first start). */
    moveKeyGate: `
      INSERT INTO ${s}.rate_key_gates (batch_id, rate_key, next_at) VALUES ($1, $2, $3)
      ON CONFLICT (batch_id, rate_key) DO UPDATE SET next_at = excluded.next_at`,
    /** $1 batchId $2 now — when the batch's first closed --rate-key gate opens, if any is closed. */
    nextKeyGate: `SELECT min(next_at) AS at FROM ${s}.rate_key_gates WHERE batch_id = $1 AND next_at > $2`,
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
          next_run_at = $2, last_error = $3, busy_since = NULL,
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

export type Statements = Record<keyof ReturnType<typeof sql>, Statement>;

/** Named per statement; a pool serves one store, so one schema, so the names never clash. */
export function prepareStatements(schema: string): Statements {
  return Object.fromEntries(
    Object.entries(sql(`"${schema}"`)).map(([name, text]) => [name, { name: `splitdance_${name}`, text }]),
  ) as Statements;
}
