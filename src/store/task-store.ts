/**
 * The store the coordinator and commands use, as verbs grouped by who needs them: the lease
 * verbs of a coordinator, the queries and admin verbs of the commands; `TaskStore` is all of
 * them, what the open functions (open-store.ts) return. It never exposes a driver type, so
 * SQLite and PostgreSQL can sit behind it. The records the verbs speak live in records.ts,
 * re-exported here so a caller imports the store's vocabulary from one place.
 */
import type {
  Applied,
  AttemptRow,
  AttemptStats,
  BatchAttempt,
  BatchMoves,
  BatchRecord,
  Budget,
  CancelResult,
  ClaimRequest,
  ClaimedTask,
  Counts,
  EnqueueOptions,
  EnqueueResult,
  ErrorCount,
  NewBatch,
  LostAttempt,
  PendingOutput,
  PruneResult,
  LearnedWork,
  PublishedLevel,
  Rank,
  ReleasedTask,
  RunningOwner,
  Settlement,
  StageCounts,
  TaskFilter,
  TaskOutcome,
  TaskRow,
  TaskSpec,
  TaskStatus,
} from './records.js';
import type { HookRecord, HookStore } from './hook-records.js';

export * from './records.js';
export * from './hook-records.js';

/** What names a store, for messages and the log folder. */
interface StoreInfo {
  readonly location: string;
  /**
   * The store's identity: 32 hex digits, random, written once when the store was created
   * (or upgraded to a version that has one) and never changed. It names the store's log folder.
   */
  readonly identity: string;
}

/** The reads a coordinator's loop makes between ticks: its batch, what is left, when the next retry is due. */
export interface BatchProgress {
  findBatch(name: string): Promise<BatchRecord | undefined>;
  /**
   * The batch's tasks per state, kept by both stores as tasks change (task_counts: SQLite
   * migration 019, PostgreSQL 017): a few rows whatever the batch's size.
   */
  counts(batchId: number): Promise<Counts>;
  /**
   * Whether the batch has a task left to finish (PENDING or RUNNING), and when an outcome of it
   * was last committed: what an idle coordinator looks at. A few index lookups whatever the
   * batch's size, on both stores.
   */
  progress(batchId: number): Promise<BatchMoves>;
  /** The earliest `next_run_at` of a PENDING task whose needs are met, or null. */
  nextDueAt(batchId: number): Promise<number | null>;
  /** The learned durations of the batch's open and succeeded tasks (--order history; zeros otherwise): what the ETA weighs. */
  learnedWork(batchId: number): Promise<LearnedWork>;
  /** --on-complete, --on-failure: the batch's hook runs, the latest first. */
  hooksOf(batchId: number): Promise<HookRecord[]>;
  /** --adaptive: the levels the batch's runs and workers published since `since`, highest first. */
  adaptiveLevels(batchId: number, since: number): Promise<PublishedLevel[]>;
  /**
   * The batch's committed successes whose declared output's rename is not known to be done
   * (every batch's with null), by task id: the batch is not finished while any is left.
   */
  pendingOutputs(batchId: number | null): Promise<PendingOutput[]>;
}

/** The lease verbs: what a coordinator (of `run` or `worker`) needs to claim, run, settle and recover tasks. */
export interface LeaseStore extends StoreInfo, BatchProgress {
  /** Atomically claim up to one PENDING, due task whose needs succeeded per slot, counting the attempt. */
  claim(request: ClaimRequest): Promise<ClaimedTask[]>;
  /**
   * --rate: takes up to `want` starts from the batch's gate at `now` (starts `spacingMs`
   * apart, `burst` at most at once), shared by every run and worker on the store. Returns how
   * many were granted and when another may start.
   */
  takeStarts(batchId: number, want: number, now: number, spacingMs: number, burst: number): Promise<{ granted: number; wakeAt: number }>;
  /** --rate-key: when the first of the batch's key gates closed at `now` opens, or null when none is closed. */
  keyGateOpensAt(batchId: number, now: number): Promise<number | null>;
  /** --adaptive: records `owner`'s level on the batch at `now` (null removes it: the run is over). */
  publishLevel(batchId: number, owner: string, level: { level: number; max: number; pace: number | null } | null, now: number): Promise<void>;
  /**
   * Extend the leases of every task `owner` holds; returns their tokens, so an owner learns
   * which of its attempts lost their task (taken over while it was frozen).
   */
  heartbeat(owner: string, leaseExpiresAt: number): Promise<number[]>;
  /**
   * settle, then claim, in one transaction: what a coordinator does on every tick. `placed`:
   * declared outputs now in place (as outputsPlaced), confirmed first, so the claim sees them.
   */
  settleAndClaim(settlements: Settlement[], request: ClaimRequest, placed?: { taskId: number; temp: string }[]): Promise<{ applied: Applied[]; claimed: ClaimedTask[] }>;
  /**
   * Commit attempt outcomes in one transaction; returns those whose token still held its task,
   * in the order given, each with the status the commit left its task in (the others were fenced off).
   */
  settle(settlements: Settlement[]): Promise<Applied[]>;
  /** Current status of the given tasks (the store, not a claim-time copy, decides whether a failure ended a task). */
  statuses(taskIds: number[]): Promise<Map<number, TaskStatus>>;
  /**
   * The owners holding RUNNING tasks in the batch (or all batches), each with the latest lease
   * end of its tasks (on the store's lease clock) and whether that has passed at `now` (as
   * releaseStale judges it): for dead-owner checks, and to see whether an owner still renews
   * (a heartbeat or a claim moves its lease end).
   */
  runningOwners(batchId: number | null, now: number): Promise<RunningOwner[]>;
  /**
   * Return to PENDING (or FAILED when out of attempts) tasks whose lease expired or whose
   * owner is dead, never those of `self` (a live coordinator's own) nor of `liveOwners`
   * (live processes on this host, stopped ones included); records LOST. `beforeRelease` is
   * told the attempts it is about to record LOST inside the transaction, before they are: what
   * it cleans up (their temporary files) is then gone whenever the release is committed, and a
   * crash before the commit leaves them to the next recovery, which tells it again.
   */
  releaseStale(batchId: number | null, now: number, deadOwners: string[], self: string, liveOwners?: string[], beforeRelease?: (lost: LostAttempt[]) => void): Promise<ReleasedTask[]>;
  /** Their outputs are in place: forgets each temporary file (only while it is still the one recorded). */
  outputsPlaced(placed: { taskId: number; temp: string }[]): Promise<void>;
  /**
   * This process's wall clock stepped by `stepMs`: moves the given waiting retries (each still
   * PENDING and due at `dueAt`, as this process scheduled it) by the step, so each stays as far
   * away as its backoff said. Returns the ones moved. A store whose times are on another clock
   * (PostgreSQL: the server's) moves nothing.
   */
  shiftRetries(retries: RetryDue[], stepMs: number): Promise<RetryDue[]>;
}

/** A retry a coordinator scheduled: the task, and when it is due. */
export interface RetryDue {
  taskId: number;
  dueAt: number;
}

/** The reads of the commands that look (status, tasks, show, report, logs, batches). */
export interface QueryStore extends StoreInfo, BatchProgress {
  latestBatch(): Promise<BatchRecord | undefined>;
  listBatches(): Promise<BatchRecord[]>;
  /** Succeeded tasks that were up to date (declared output newer than input): nothing ran. */
  upToDateCount(batchId: number): Promise<number>;
  /** Succeeded tasks whose file has changed since they ran (as last observed). */
  changedCount(batchId: number): Promise<number>;
  /** The highest `seq` of the batch's tasks (0 for none): the next enqueue numbers its tasks after it. */
  lastSeq(batchId: number): Promise<number>;
  /** Counts per stage of a batch with stages (none for a batch without). */
  stageCounts(batchId: number): Promise<StageCounts[]>;
  /** The last errors of FAILED tasks with their counts, most frequent first. */
  topErrors(batchId: number, limit: number): Promise<ErrorCount[]>;
  /** The matching tasks, all in one array: for a bounded answer (a limit, a few); a listing of a batch takes eachTaskPage. */
  listTasks(filter: TaskFilter): Promise<TaskRow[]>;
  /**
   * The matching tasks in creation order (the filter's `order` is ignored), a page at a time:
   * `onPage` is awaited before the next page is read, so memory holds one page whatever the
   * batch's size (`tasks`, `logs --batch`). Pages are read apart: each task comes once, as it
   * was when its page was read.
   */
  eachTaskPage(filter: TaskFilter, onPage: (tasks: TaskRow[]) => Promise<void>): Promise<void>;
  /** As eachTaskPage, each task's outcome alone (`results`): the batch's tasks of `status` (retrying: `attemptedOnly`), in creation order. */
  eachOutcomePage(filter: Pick<TaskFilter, 'batchId' | 'status' | 'attemptedOnly'>, onPage: (rows: TaskOutcome[]) => Promise<void>): Promise<void>;
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
  /** The median duration (ms) of each key's successes in every batch of `source`, keyed by `durationKey(stage, key)` (--order history). */
  learnedDurations(source: string): Promise<Map<string, number>>;
  /**
   * The batch's ended attempts per outcome and their durations bucketed by `boundsMs`
   * (ascending whole ms), in one pass over its attempts: for `metrics`.
   */
  attemptStats(batchId: number, boundsMs: readonly number[]): Promise<AttemptStats>;
  /**
   * The latest due time of a task waiting for a retry (PENDING with attempts), or null: the
   * backoff still ahead, which an ETA cannot undercut. Read through the state index, newest due first.
   */
  lastRetryDueAt(batchId: number): Promise<number | null>;
  /** First and last activity of the batch, for rates. */
  activity(batchId: number): Promise<{ firstStartedAt: number | null; lastFinishedAt: number | null }>;
}

/** The writes of the commands that change a batch (run's enqueue, pause, cancel, retry-failed, prune). */
export interface AdminStore {
  /**
   * Create the batch if needed and insert the tasks whose keys it lacks, atomically; note
   * changed fingerprints, and with `rerunChanged` re-queue succeeded tasks whose file changed.
   */
  enqueue(batch: NewBatch, specs: Iterable<TaskSpec>, options?: EnqueueOptions): Promise<EnqueueResult>;
  /**
   * Replace the stored job definition and bump its version (returned); unfinished tasks get the
   * new attempt budget (per stage, with stages). Claims under the old version stop at once.
   */
  updateJob(batchId: number, job: Record<string, unknown>, budget: Budget): Promise<number>;
  /** Pause (nothing new is claimed; running attempts finish) or resume a batch. */
  setPaused(batchId: number, paused: boolean): Promise<void>;
  /**
   * New claim ranks for the batch's tasks that still wait (PENDING; others are left as they
   * are), and, when given, the fields of `patch` set in its stored definition (the others as
   * they are in the store then), without a new definition version (`set`). Returns how many
   * tasks moved.
   */
  rerank(batchId: number, ranks: Rank[], patch?: Record<string, unknown>): Promise<number>;
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
   * `cancel`: PENDING tasks of the batch (matching `keyMatches`) end CANCELLED; RUNNING ones
   * finish and end CANCELLED unless they succeed; stage tasks that need them are cancelled too.
   * One transaction, made range of ids by range: it never holds the batch's rows in memory.
   */
  cancel(filter: Pick<TaskFilter, 'batchId' | 'keyMatches'>): Promise<CancelResult>;
}

/** What a command that opens a batch gets: every query and admin verb, none of the lease verbs. */
export type CommandStore = QueryStore & AdminStore;

export interface TaskStore extends LeaseStore, QueryStore, AdminStore, HookStore {
  close(): Promise<void>;
}
