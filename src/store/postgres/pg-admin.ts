import type { Budget, CancelResult, PruneResult, Rank, TaskFilter } from '../records.js';
import type { BatchDbRow } from '../shared/db-rows.js';
import { budgets } from '../budget.js';
import { PRUNE_CHUNK, chunkBounds, chunkDone, pruneInChunks, rangesDone, startCursor, type PruneCursor, type PruneStep } from '../shared/prune-in-chunks.js';
import type { ServerClock } from './pg-clock.js';
import type { PgDb, Sql } from './pg-db.js';
import { selectTasks, taskIdRange } from './pg-list.js';
import { lockKey } from './pg-locks.js';
import { cascade, revive } from './pg-stages.js';
import type { Statements } from './statements.js';

/**
 * The admin verbs of PostgreSQL (pause, job updates, retry-failed, cancel, prune), as
 * sqlite/sqlite-admin.ts has them: each one transaction, or a series of short ones for prune.
 * Every time written is on the server's clock (see ServerClock).
 */

/** What an admin verb runs on: the store's pool, its statements and its clock. */
export interface PgConn {
  db: PgDb;
  st: Statements;
  clock: ServerClock;
}

/** Task ids per range of a cancel: one statement each, its id array bounded. */
const ID_CHUNK = 10_000;
/** Ids per `resetFailed` statement, so a million failed tasks never make one giant array. */
const RESET_CHUNK = 1000;

export async function setPaused(c: PgConn, batchId: number, paused: boolean): Promise<void> {
  await c.db.transaction((sql) => sql.run(c.st.setPaused, [batchId, paused, c.clock.now()]));
}

/** New claim ranks for the batch's waiting tasks (`set --order`, `--priority`), and its options' `patch` when given; how many tasks moved. */
export async function rerank(c: PgConn, batchId: number, ranks: Rank[], patch?: Record<string, unknown>): Promise<number> {
  return c.db.transaction(async (sql) => {
    const moved = ranks.length ? await sql.run(c.st.rerank, [batchId, ranks.map((r) => r.id), ranks.map((r) => r.priority), ranks.map((r) => r.rank)]) : 0;
    if (patch) await sql.run(c.st.setOptions, [batchId, JSON.stringify(patch), c.clock.now()]);
    return moved;
  });
}

export async function updateJob(c: PgConn, batchId: number, job: Record<string, unknown>, budget: Budget): Promise<number> {
  const st = c.st;
  return c.db.transaction(async (sql) => {
    const now = c.clock.now();
    // Task rows first, the batch row last, the order settle locks them in.
    for (const [stage, maxAttempts] of budgets(budget)) await sql.run(st.updateMaxAttempts, [batchId, maxAttempts, stage]);
    const failed = await sql.rows<{ item_key: string | null }>(st.failExhausted, [batchId, now]);
    await cascade(sql, st, batchId, failed.map((r) => r.item_key), now);
    // The batch row last, as settle locks it, so the two cannot deadlock. FOR UPDATE waits for
    // the claims that read the old version (they never wait on tasks: SKIP LOCKED).
    await sql.run(st.lockBatchForJob, [batchId]);
    const [row] = await sql.rows<{ job_version: number }>(st.updateJob, [batchId, JSON.stringify(job), now]);
    return row?.job_version ?? 0;
  });
}

export async function retryFailed(c: PgConn, filter: TaskFilter): Promise<number> {
  const st = c.st;
  return c.db.transaction(async (sql) => {
    const [batch] = await sql.rows<{ name: string }>(st.batchName, [filter.batchId]);
    if (!batch) return 0;
    await sql.run(st.lockBatchWork, [batchKey(c, batch.name)]);
    const ids = (await selectTasks(sql, st, { ...filter, status: 'FAILED' })).map((t) => t.id);
    let n = 0;
    const items: (string | null)[] = [];
    for (let i = 0; i < ids.length; i += RESET_CHUNK) {
      const reset = await sql.rows<{ item_key: string | null }>(st.resetFailed, [ids.slice(i, i + RESET_CHUNK)]);
      n += reset.length;
      items.push(...reset.map((r) => r.item_key));
    }
    // Their dependents wait for them again; a reset task whose own need is still dead is cancelled.
    await revive(sql, st, filter.batchId, items);
    await cascade(sql, st, filter.batchId, items, c.clock.now());
    return n;
  });
}

/**
 * One transaction, range of ids by range (see QueryStore's cancel): first every matching task
 * is ended or asked to stop, then the stage tasks needing them follow, from the items of the
 * tasks this cancel reached (found again by its time and reason, not kept in memory).
 */
export async function cancel(c: PgConn, filter: Pick<TaskFilter, 'batchId' | 'keyMatches'>): Promise<CancelResult> {
  const st = c.st;
  return c.db.transaction(async (sql) => {
    const now = c.clock.now();
    const result: CancelResult = { cancelled: 0, stopping: 0, dependents: 0 };
    const batchId = filter.batchId;
    const { lo, hi } = await taskIdRange(sql, st, batchId);
    if (lo === null || hi === null) return result;
    for (let from = lo; from <= hi; from += ID_CHUNK) {
      const open = await sql.rows<{ id: unknown; task_key: string }>(st.openTasks, [batchId, from, Math.min(hi, from + ID_CHUNK - 1)]);
      const ids = open.filter((t) => !filter.keyMatches || filter.keyMatches(t.task_key)).map((t) => t.id);
      if (ids.length === 0) continue;
      for (const r of await sql.rows<{ status: string }>(st.cancelTasks, [ids, CANCELLED, now])) {
        if (r.status === 'RUNNING') result.stopping++;
        else result.cancelled++;
      }
    }
    for (let from = lo; from <= hi; from += ID_CHUNK) {
      const rows = await sql.rows<{ item_key: string }>(st.cancelledItems, [batchId, from, Math.min(hi, from + ID_CHUNK - 1), CANCELLED, now]);
      if (rows.length > 0) result.dependents += await cascade(sql, st, batchId, rows.map((r) => r.item_key), now);
    }
    return result;
  });
}

/** The reason a task `cancel` ended gets. */
const CANCELLED = 'cancelled';

export async function pruneFinished(c: PgConn, before: number, onChunk?: (batch: string, logPaths: string[]) => void, only?: number): Promise<PruneResult> {
  const cutoff = c.clock.toServer(before);
  const batches = await c.db.read((sql) => sql.rows<BatchDbRow>(c.st.finishedBatches, [cutoff, only ?? null]));
  return pruneInChunks(batches, (b, at) => c.db.transaction((sql) => pruneChunk(sql, c.st, { batch: b, lock: batchKey(c, b.name), cutoff }, at)), onChunk);
}

/**
 * One short transaction of a prune (see prune-in-chunks.ts): a chunk of a batch's attempts,
 * and then the tasks of their range, else the batch row. `at` is null for the batch's first
 * chunk, which takes the exact check and reads the span of the batch's ids.
 */
async function pruneChunk(sql: Sql, st: Statements, b: { batch: BatchDbRow; lock: string; cutoff: number }, at: PruneCursor | null): Promise<PruneStep> {
  const id = b.batch.id;
  // Lock, then check with a fresh snapshot: an enqueue or retry that committed meanwhile keeps its
  // batch. The exact check (a scan of the batch's tasks) once; the cheap one before later chunks.
  await sql.run(st.lockBatchWork, [b.lock]);
  await sql.run(st.lockBatchForDelete, [id]);
  if ((await sql.run(at === null ? st.finishedBatches : st.stillPrunable, at === null ? [b.cutoff, id] : [id, b.cutoff])) === 0) return 'live';
  at ??= startCursor(await taskIdRange(sql, st, id));
  if (rangesDone(at)) {
    await sql.run(st.deleteBatch, [id]); // anything left (a task added and finished meanwhile) goes with it
    return 'gone';
  }
  const bounds = chunkBounds(at);
  const rows = await sql.rows<{ task_id: unknown; id: unknown; path: string | null }>(st.pruneAttempts, [id, bounds.from, bounds.to, bounds.afterTask, bounds.afterAttempt, bounds.n]);
  const attempts = rows.map((r) => ({ task_id: Number(r.task_id), id: Number(r.id), path: r.path }));
  const tasks = attempts.length < PRUNE_CHUNK ? await sql.run(st.pruneTasks, [id, bounds.from, bounds.to]) : 0;
  return chunkDone(at, attempts, tasks);
}

/** The advisory lock that serialises enqueue, retryFailed and prune of one batch. */
function batchKey(c: PgConn, name: string): string {
  return lockKey('batch', c.db.target.schema, name);
}
