import type { AttemptRow, AttemptStats, BatchAttempt, BatchMoves, BatchRecord, Counts, ErrorCount, RunningOwner, StageCounts, TaskFilter, TaskOutcome, TaskRow, TaskStatus } from '../records.js';
import { stageCountsOf, toAttemptRow, toBatch, toCounts, toTaskRow, type AttemptDbRow, type BatchDbRow, type CountDbRow, type TaskDbRow } from '../shared/db-rows.js';
import type Database from 'better-sqlite3';
import { durationKey } from '../task-spec.js';
import type { SqliteConn } from './sqlite-conn.js';
import { checkBounds, foldAttemptStats, type AttemptStatsRow } from '../attempt-stats.js';
import { eachOutcomePage as outcomesOf, eachTaskPage as pagesOf } from '../shared/task-pages.js';

/**
 * The read verbs of SQLite (what status, tasks, show, report and the coordinator's checks
 * ask), each a plain read outside any transaction: WAL gives it a consistent snapshot.
 */

export function findBatch(c: SqliteConn, name: string): BatchRecord | undefined {
  const row = c.read(() => c.st.batchByName.get(name) as BatchDbRow | undefined);
  return row && toBatch(row);
}

export function latestBatch(c: SqliteConn): BatchRecord | undefined {
  const row = c.read(() => c.st.latestBatch.get() as BatchDbRow | undefined);
  return row && toBatch(row);
}

export function listBatches(c: SqliteConn): BatchRecord[] {
  return c.read(() => (c.st.listBatches.all() as BatchDbRow[]).map(toBatch));
}

export function upToDateCount(c: SqliteConn, batchId: number): number {
  return c.read(() => (c.st.countUpToDate.get({ batchId }) as { n: number }).n);
}

export function changedCount(c: SqliteConn, batchId: number): number {
  return c.read(() => (c.st.countChanged.get({ batchId }) as { n: number }).n);
}

export function lastSeq(c: SqliteConn, batchId: number): number {
  return c.read(() => (c.st.lastSeq.get({ batchId }) as { n: number }).n);
}

export function statuses(c: SqliteConn, taskIds: number[]): Map<number, TaskStatus> {
  if (taskIds.length === 0) return new Map();
  const rows = c.read(() => c.st.statuses.all(JSON.stringify(taskIds)) as { id: number; status: TaskStatus }[]);
  return new Map(rows.map((r) => [r.id, r.status]));
}

export function runningOwners(c: SqliteConn, batchId: number | null, now: number): RunningOwner[] {
  const rows = c.read(() => c.st.runningOwners.all({ batchId, now }) as { owner: string; lease_end: number; expired: number }[]);
  return rows.map((r) => ({ owner: r.owner, leaseEnd: r.lease_end, expired: r.expired === 1 }));
}

export function counts(c: SqliteConn, batchId: number): Counts {
  return toCounts(c.read(() => c.st.counts.all({ batchId }) as CountDbRow[]));
}

export function progress(c: SqliteConn, batchId: number): BatchMoves {
  const row = c.read(() => c.st.progress.get({ batchId }) as { open: number; last: number | null } | undefined);
  return { unfinished: row?.open === 1, lastFinishedAt: row?.last ?? null };
}

export function stageCounts(c: SqliteConn, batchId: number): StageCounts[] {
  return stageCountsOf(c.read(() => c.st.stageCounts.all({ batchId }) as (CountDbRow & { stage: string })[]));
}

export function nextDueAt(c: SqliteConn, batchId: number): number | null {
  return c.read(() => c.st.nextDue.get(batchId) as { due: number | null }).due;
}

export function lastRetryDueAt(c: SqliteConn, batchId: number): number | null {
  return (c.read(() => c.st.lastRetryDue.get(batchId) as { due: number } | undefined))?.due ?? null;
}

export function topErrors(c: SqliteConn, batchId: number, limit: number): ErrorCount[] {
  return c.read(() => c.st.failedErrors.all({ batchId, limit }) as ErrorCount[]);
}

export function activity(c: SqliteConn, batchId: number): { firstStartedAt: number | null; lastFinishedAt: number | null } {
  const row = c.read(() => c.st.activity.get(batchId) as { first: number | null; last: number | null } | undefined);
  return { firstStartedAt: row?.first ?? null, lastFinishedAt: row?.last ?? null };
}

export function historySize(c: SqliteConn): number {
  return c.read(() => (c.st.historySize.get() as { n: number }).n);
}

/** The median duration (ms) of each key's successes in the batches of `source`, keyed by durationKey. */
export function learnedDurations(c: SqliteConn, source: string): Map<string, number> {
  return c.withTempFiles(() => {
    const rows = c.read(() => c.st.learnedDurations.all(source) as { stage: string; key: string; ms: number }[]);
    return new Map(rows.map((r) => [durationKey(r.stage, r.key), r.ms]));
  });
}

/**
 * The tasks matching `filter`, in its order (creation, or slowest first): the SQL narrows by
 * status, error text and attempts, the JS predicates (globs, error signatures) by key and
 * error, and reading stops at `limit`. Usable inside a write (retryFailed, cancel).
 */
export function selectTasks(c: SqliteConn, filter: TaskFilter): TaskRow[] {
  return c.withTempFiles(() => {
    const out: TaskRow[] = [];
    if (filter.limit !== undefined && filter.limit <= 0) return out;
    const statement = filter.order === 'slowest' ? c.st.slowestTasks : c.st.listTasks;
    const rows = statement.iterate({
      batchId: filter.batchId,
      status: filter.status ?? null,
      error: filter.errorContains ?? null,
      attempted: filter.attemptedOnly ? 1 : null,
    }) as IterableIterator<TaskDbRow>;
    for (const row of rows) {
      if (filter.keyMatches && !filter.keyMatches(row.task_key)) continue;
      if (filter.errorMatches && !filter.errorMatches(row.last_error)) continue;
      out.push(toTaskRow(row));
      if (filter.limit !== undefined && out.length >= filter.limit) {
        rows.return?.();
        break;
      }
    }
    return out;
  });
}

/** See QueryStore.eachOutcomePage: as eachTaskPage, five columns a row. */
export async function eachOutcomePage(c: SqliteConn, filter: Pick<TaskFilter, 'batchId' | 'status' | 'attemptedOnly'>, onPage: (rows: TaskOutcome[]) => Promise<void>): Promise<void> {
  const range = c.read(() => c.st.taskIdRange.get(filter.batchId) as { lo: number | null; hi: number | null });
  const sqlPart = { batchId: filter.batchId, status: filter.status ?? null, attempted: filter.attemptedOnly ? 1 : null };
  // Rows as arrays (raw), each made into its outcome once: a row object per task as well cost
  // 40% of `results` (1.3 s against 0.76 s of reading for a million tasks).
  const read = (from: number, to: number) => c.st.outcomePage.raw(true).all({ ...sqlPart, from, to }) as OutcomeCells[];
  await outcomesOf(range, async (from, to) => c.read(() => read(from, to).map(([key, stage, status, lastError, result]) => ({ key, stage, status, lastError, result }))), onPage);
}

/** outcomePage's columns in order: task_key, stage, status, last_error, result. */
type OutcomeCells = [string, string, TaskOutcome['status'], string | null, string | null];

/** See QueryStore.eachTaskPage: ranges of ids by rowid, each a read of its own. */
export async function eachTaskPage(c: SqliteConn, filter: TaskFilter, onPage: (tasks: TaskRow[]) => Promise<void>): Promise<void> {
  const range = c.read(() => c.st.taskIdRange.get(filter.batchId) as { lo: number | null; hi: number | null });
  const sqlPart = { batchId: filter.batchId, status: filter.status ?? null, error: filter.errorContains ?? null, attempted: filter.attemptedOnly ? 1 : null };
  await pagesOf(range, filter, async (from, to) => c.read(() => c.st.taskPage.all({ ...sqlPart, from, to }) as TaskDbRow[]), onPage);
}

export function runningTasks(c: SqliteConn, batchId: number, limit: number): TaskRow[] {
  return c.read(() => (c.st.runningTasks.all({ batchId, limit }) as TaskDbRow[]).map(toTaskRow));
}

export function getTask(c: SqliteConn, batchId: number, key: string): TaskRow | undefined {
  const row = c.read(() => c.st.taskByKey.get(batchId, key, key.split('/')[0]) as TaskDbRow | undefined);
  return row && toTaskRow(row);
}

export function attemptsOf(c: SqliteConn, taskId: number): AttemptRow[] {
  return c.read(() => (c.st.attemptsOf.all(taskId) as AttemptDbRow[]).map(toAttemptRow));
}

export function recentAttempts(c: SqliteConn, batchId: number, limit: number): BatchAttempt[] {
  const rows = c.read(() => c.st.batchAttempts.all({ batchId, limit }) as (AttemptDbRow & { task_key: string })[]);
  return rows.reverse().map((r) => ({ ...toAttemptRow(r), key: r.task_key, owner: r.owner }));
}

export function batchAttemptCount(c: SqliteConn, batchId: number): number {
  return c.read(() => (c.st.batchAttemptCount.get(batchId) as { n: number }).n);
}

/**
 * Attempts per outcome and duration bucket, in one pass over the batch's attempts. SQLite has
 * no width_bucket: the bounds become a CASE, prepared once per set of bounds.
 */
export function attemptStats(c: SqliteConn, batchId: number, boundsMs: readonly number[]): AttemptStats {
  const bounds = checkBounds(boundsMs);
  const key = bounds.join(',');
  let statement = statsStatements.get(c)?.get(key);
  if (!statement) {
    const cases = bounds.map((b, i) => `WHEN a.duration_ms <= ${b} THEN ${i}`).join(' ');
    statement = c.read(() =>
      c.db.prepare(`
        SELECT a.outcome AS outcome, CASE WHEN a.duration_ms IS NULL THEN NULL ${cases} ELSE ${bounds.length} END AS bucket,
          count(*) AS n, sum(a.duration_ms) AS sum_ms
        FROM tasks t JOIN attempts a ON a.task_id = t.id
        WHERE t.batch_id = ? AND a.outcome IS NOT NULL GROUP BY 1, 2`),
    );
    if (!statsStatements.has(c)) statsStatements.set(c, new Map());
    statsStatements.get(c)!.set(key, statement);
  }
  const prepared = statement;
  return foldAttemptStats(c.read(() => prepared.all(batchId) as AttemptStatsRow[]), bounds);
}

const statsStatements = new WeakMap<SqliteConn, Map<string, Database.Statement>>();

/** The batches a prune would delete now (see AdminStore.pruneFinished). */
export function prunableBatches(c: SqliteConn, before: number, only?: number): BatchRecord[] {
  return c.read(() => (c.st.finishedBatches.all({ before, only: only ?? null }) as BatchDbRow[]).map(toBatch));
}
