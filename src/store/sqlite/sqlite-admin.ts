import { setTimeout as sleep } from 'node:timers/promises';
import type { Budget, CancelResult, PruneResult, Rank, TaskFilter, TaskStatus } from '../records.js';
import type { BatchDbRow } from '../shared/db-rows.js';
import { budgets } from '../budget.js';
import { PRUNE_CHUNK, chunkBounds, chunkDone, pruneInChunks, rangesDone, startCursor, type PruneCursor, type PruneStep } from '../shared/prune-in-chunks.js';
import type { SqliteConn } from './sqlite-conn.js';
import { selectTasks } from './sqlite-list.js';
import { cascade, revive } from './sqlite-stages.js';

/**
 * The admin verbs of SQLite (pause, job updates, retry-failed, cancel, prune), each one
 * write transaction, or a series of short ones for prune.
 */

/** Task ids per statement of a whole-batch update (see updateJob). */
const ID_CHUNK = 10_000;

export function setPaused(c: SqliteConn, batchId: number, paused: boolean): void {
  c.write(() => c.st.setPaused.run({ batchId, paused: paused ? 1 : 0, now: Date.now() }));
}

/** New claim ranks for the batch's waiting tasks (`set --order`, `--priority`), and its options' `patch` when given; how many tasks moved. */
export function rerank(c: SqliteConn, batchId: number, ranks: Rank[], patch?: Record<string, unknown>): number {
  return c.write(() => {
    const moved = ranks.length ? c.st.rerank.run({ batchId, list: JSON.stringify(ranks.map((r) => [r.id, r.priority, r.rank])) }).changes : 0;
    if (patch) c.st.setOptions.run({ batchId, patch: JSON.stringify(patch), now: Date.now() });
    return moved;
  });
}

export function updateJob(c: SqliteConn, batchId: number, job: Record<string, unknown>, budget: Budget): number {
  const st = c.st;
  return c.write(() => {
    const now = Date.now();
    const row = st.updateJob.get({ batchId, job: JSON.stringify(job), now }) as { job_version: number } | undefined;
    const { lo, hi } = st.taskIdRange.get(batchId) as { lo: number | null; hi: number | null };
    const items: (string | null)[] = [];
    // In ranges of ids: each statement's undo log is kept in memory, so none may span a million rows.
    for (let from = lo ?? 1; lo !== null && hi !== null && from <= hi; from += ID_CHUNK) {
      const range = { batchId, from, to: from + ID_CHUNK - 1 };
      for (const [stage, maxAttempts] of budgets(budget)) st.updateMaxAttempts.run({ ...range, maxAttempts, stage });
      for (const r of st.failExhausted.all({ ...range, now }) as { item_key: string | null }[]) items.push(r.item_key);
    }
    cascade(st, batchId, items, now);
    return row?.job_version ?? 0;
  });
}

export function retryFailed(c: SqliteConn, filter: TaskFilter): number {
  return c.write(() => {
    let n = 0;
    const items = new Set<string>();
    for (const t of selectTasks(c, { ...filter, status: 'FAILED' })) {
      const row = c.st.resetFailed.get(t.id) as { item_key: string | null } | undefined;
      if (!row) continue;
      n++;
      if (row.item_key !== null) items.add(row.item_key);
    }
    // Their dependents, cancelled because these failed, wait for them again; a reset task
    // whose own need is still dead is cancelled at once instead of waiting forever.
    revive(c.st, filter.batchId, items);
    cascade(c.st, filter.batchId, items, Date.now());
    return n;
  });
}

/**
 * One transaction, range of ids by range (see QueryStore's cancel): first every matching task
 * is ended or asked to stop, then the stage tasks needing them follow, from the items of the
 * tasks this cancel reached (found again by its time and reason, not kept in memory).
 */
export function cancel(c: SqliteConn, filter: Pick<TaskFilter, 'batchId' | 'keyMatches'>): CancelResult {
  const st = c.st;
  return c.write(() => {
    const now = Date.now();
    const result: CancelResult = { cancelled: 0, stopping: 0, dependents: 0 };
    const batchId = filter.batchId;
    const { lo, hi } = st.taskIdRange.get(batchId) as { lo: number | null; hi: number | null };
    if (lo === null || hi === null) return result;
    const ranges = () => idRanges(lo, hi, (from, to) => ({ batchId, from, to }));
    for (const range of ranges()) {
      const open = st.openTasks.all(range) as { id: number; task_key: string }[];
      const ids = open.filter((t) => !filter.keyMatches || filter.keyMatches(t.task_key)).map((t) => t.id);
      if (ids.length === 0) continue;
      for (const r of st.cancelTasks.all({ ids: JSON.stringify(ids), reason: CANCELLED, now }) as { status: TaskStatus }[]) {
        if (r.status === 'RUNNING') result.stopping++;
        else result.cancelled++;
      }
    }
    for (const range of ranges()) {
      const items = (st.cancelledItems.all({ ...range, reason: CANCELLED, now }) as { item_key: string }[]).map((r) => r.item_key);
      if (items.length > 0) result.dependents += cascade(st, batchId, items, now);
    }
    return result;
  });
}

/** The reason a task `cancel` ended gets. */
const CANCELLED = 'cancelled';

/** [from, to] ranges of ID_CHUNK ids covering lo…hi. */
function* idRanges<R>(lo: number, hi: number, make: (from: number, to: number) => R): Generator<R> {
  for (let from = lo; from <= hi; from += ID_CHUNK) yield make(from, Math.min(hi, from + ID_CHUNK - 1));
}

export async function pruneFinished(
  c: SqliteConn,
  before: number,
  onChunk?: (batch: string, logPaths: string[]) => void,
  only?: number,
): Promise<PruneResult> {
  const batches = c.read(() => c.st.finishedBatches.all({ before, only: only ?? null }) as BatchDbRow[]);
  // A writer waiting for the lock polls (SQLite's busy handler sleeps between tries): without
  // a gap, the next chunk takes the lock again first and starves it into its busy timeout.
  // The gap is twice the chunk's time, so the lock is free two thirds of the time.
  const gap = (stepMs: number) => sleep(Math.max(5, 2 * stepMs));
  return pruneInChunks(
    batches,
    // The span of the batch's ids is read once, outside the lock (a pass over the batch's index entries).
    async (b, at) => {
      const cursor = at ?? startCursor(c.read(() => c.st.taskIdRange.get(b.id) as { lo: number | null; hi: number | null }));
      return c.write(() => pruneChunk(c, b.id, before, cursor));
    },
    onChunk,
    gap,
  );
}

/** One short transaction of a prune: a chunk of attempts (and then the tasks of their range), else the batch row. */
function pruneChunk(c: SqliteConn, batchId: number, before: number, at: PruneCursor): PruneStep {
  const st = c.st;
  if (!st.stillPrunable.get({ batchId, before })) return 'live';
  st.raiseHighWater.run(); // the ids about to go stay taken (ids never repeat)
  if (rangesDone(at)) {
    st.deleteBatch.run(batchId); // anything left (a task added and finished meanwhile) goes with it
    return 'gone';
  }
  const bounds = { batchId, ...chunkBounds(at) };
  const attempts = st.pruneAttempts.all(bounds) as { task_id: number; id: number; path: string | null }[];
  const tasks = attempts.length < PRUNE_CHUNK ? st.pruneTasks.run({ batchId, from: bounds.from, to: bounds.to }).changes : 0;
  return chunkDone(at, attempts, tasks);
}
