import type {
  AttemptRow,
  BatchAttempt,
  BatchRecord,
  Budget,
  CancelResult,
  EnqueueResult,
  ErrorCount,
  NewBatch,
  PruneResult,
  StageCounts,
  TaskFilter,
  TaskRow,
  TaskSpec,
} from './task-store.js';
import type { BatchProgress, StoreInfo } from './lease-store.js';
import type { AttemptStats } from './attempt-stats.js';

/** The reads of the commands that look (status, tasks, show, report, logs, batches). */
export interface QueryStore extends StoreInfo, BatchProgress {
  latestBatch(): Promise<BatchRecord | undefined>;
  listBatches(): Promise<BatchRecord[]>;
  /** Succeeded tasks that were up to date (declared output newer than input): nothing ran. */
  upToDateCount(batchId: number): Promise<number>;
  /** Succeeded tasks whose file has changed since they ran (as last observed). */
  changedCount(batchId: number): Promise<number>;
  /** Counts per stage of a batch with stages (none for a batch without). */
  stageCounts(batchId: number): Promise<StageCounts[]>;
  /** The last errors of FAILED tasks with their counts, most frequent first. */
  topErrors(batchId: number, limit: number): Promise<ErrorCount[]>;
  listTasks(filter: TaskFilter): Promise<TaskRow[]>;
  /**
   * The batch's running tasks (RUNNING, not queued), longest running (earliest started) first, at most `limit`: read
   * through the index of RUNNING rows alone, so a live view can ask every second of a big batch.
   */
  runningTasks(batchId: number, limit: number): Promise<TaskRow[]>;
  getTask(batchId: number, key: string): Promise<TaskRow | undefined>;
  attemptsOf(taskId: number): Promise<AttemptRow[]>;
  /** The batch's attempts, oldest first, at most `limit` (the most recent ones when cut). */
  batchAttempts(batchId: number, limit: number): Promise<{ attempts: BatchAttempt[]; total: number }>;
  /** The same attempts without counting the batch's (a scan of the batch): for `status`'s rates. */
  recentAttempts(batchId: number, limit: number): Promise<BatchAttempt[]>;
  /**
   * The batches `pruneFinished(before, …, only)` would delete now: finished (nothing PENDING or
   * RUNNING) and idle since before `before`; only the batch `only` when given. For `prune --dry-run`.
   */
  prunableBatches(before: number, only?: number): Promise<BatchRecord[]>;
  /** Attempt rows in the whole store: the history `prune` would trim. */
  historySize(): Promise<number>;
  /**
   * The batch's ended attempts per outcome and their durations bucketed by `boundsMs`
   * (ascending whole ms), in one pass over its attempts: for `metrics`.
   */
  attemptStats(batchId: number, boundsMs: readonly number[]): Promise<AttemptStats>;
  /** First and last activity of the batch, for rates. */
  activity(batchId: number): Promise<{ firstStartedAt: number | null; lastFinishedAt: number | null }>;
}

/** The writes of the commands that change a batch (run's enqueue, pause, cancel, retry-failed, prune). */
export interface AdminStore {
  /**
   * Create the batch if needed and insert the tasks whose keys it lacks, atomically; note
   * changed fingerprints, and with `rerunChanged` re-queue succeeded tasks whose file changed.
   */
  enqueue(batch: NewBatch, specs: Iterable<TaskSpec>, options?: { rerunChanged?: boolean }): Promise<EnqueueResult>;
  /**
   * Replace the stored job definition and bump its version (returned); unfinished tasks get the
   * new attempt budget (per stage, with stages). Claims under the old version stop at once.
   */
  updateJob(batchId: number, job: Record<string, unknown>, budget: Budget): Promise<number>;
  /** Pause (nothing new is claimed; running attempts finish) or resume a batch. */
  setPaused(batchId: number, paused: boolean): Promise<void>;
  /**
   * Delete finished batches (nothing PENDING or RUNNING) whose last activity is before `before`,
   * in bounded chunks, each its own short transaction (so a concurrent run never waits long for
   * the lock): the batch's attempts, then its tasks, then the batch row. Every chunk re-checks
   * that the batch is still finished and idle, so a prune killed half-way leaves a smaller batch
   * of finished tasks (consistent) that the next prune finishes, and a batch that came back to
   * life meanwhile keeps what is left. With `onChunk`, each chunk's log files are handed over as
   * soon as it is committed (and `logPaths` stays empty); without, they are all in `logPaths`.
   * With `only` (a batch id), that batch alone is considered (`prune --batch NAME`).
   */
  pruneFinished(before: number, onChunk?: (batch: string, logPaths: string[]) => void, only?: number): Promise<PruneResult>;
  /**
   * Reset FAILED tasks matching the filter to PENDING with a fresh budget; returns how many.
   * Their dependents cancelled because they failed return to PENDING too.
   */
  retryFailed(filter: TaskFilter): Promise<number>;
  /**
   * `cancel`: PENDING tasks matching the filter end CANCELLED; RUNNING ones finish and end
   * CANCELLED unless they succeed; stage tasks that need them are cancelled too.
   */
  cancel(filter: TaskFilter): Promise<CancelResult>;
}

/** What a command that opens a batch gets: every query and admin verb, none of the lease verbs. */
export type CommandStore = QueryStore & AdminStore;
