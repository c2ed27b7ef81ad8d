/**
 * The store interface the coordinator and commands use. It speaks task verbs and
 * never exposes a driver type, so SQLite and PostgreSQL can sit behind it. All
 * times are milliseconds since the epoch.
 */

export const TASK_STATUSES = ['PENDING', 'RUNNING', 'SUCCESS', 'FAILED', 'CANCELLED'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const OUTCOMES = ['SUCCESS', 'FAILED', 'TIMEOUT', 'CRASHED', 'LOST', 'INTERRUPTED'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** The stored JSON a task carries; `version` lets later releases change its shape. */
export interface TaskPayload {
  version: 1;
  /** Absolute path of the file this task reads. */
  path: string;
  /** Path relative to the source root (the file itself for a file source). */
  rel: string;
  start?: number;
  end?: number;
}

/** What the splitter produces for one task. */
export interface TaskSpec {
  key: string;
  payload: TaskPayload;
  /** `size:mtimeMs` of the file (for chunks, of the whole file they come from). */
  fingerprint: string | null;
  /** With stages: the stage, the split item's key, the stages it needs, its budget. */
  stage?: string;
  item?: string;
  needs?: string[];
  maxAttempts?: number;
}

export type { Budget } from './budget.js';
import type { Budget } from './budget.js';

export interface BatchRecord {
  id: number;
  name: string;
  source: string;
  /** The effective job definition (JSON), with a `version`. */
  job: Record<string, unknown>;
  createdAt: number;
  updatedAt: number;
  paused: boolean;
  /**
   * The version of `job`, bumped by every `updateJob`: a coordinator claims only under the
   * version whose handler its workers loaded, and follows a newer one (another `run` changed it).
   */
  jobVersion: number;
}

export interface NewBatch {
  name: string;
  source: string;
  job: Record<string, unknown>;
  maxAttempts: number;
}

export interface EnqueueResult {
  batch: BatchRecord;
  created: boolean;
  inserted: number;
  /** Succeeded tasks whose file changed since (fingerprint), still SUCCESS. */
  changed: number;
  /** Succeeded tasks whose file changed, re-queued by `rerunChanged`. */
  requeued: number;
}

/** A claimed task, as handed to a worker. `token` is the attempt id and the fencing token. */
export interface ClaimedTask {
  id: number;
  token: number;
  key: string;
  stage: string;
  seq: number;
  attempt: number;
  maxAttempts: number;
  payload: TaskPayload;
  workerId: string;
  /** The stored results of the stages it needs (stages only), by stage. */
  inputs: Record<string, unknown>;
}

/** One worker slot asking for a task in a claim. */
export interface ClaimSlot {
  workerId: string;
  pid: number | null;
}

export interface ClaimRequest {
  batchId: number;
  owner: string;
  host: string;
  now: number;
  leaseMs: number;
  slots: ClaimSlot[];
  /**
   * The batch's job version the claimer's workers run: nothing is claimed once the batch's
   * stored version differs (checked in the claim's transaction, so an attempt never starts
   * under a definition older than the stored one). Each attempt records the version. Omitted:
   * claim under whatever version is stored.
   */
  jobVersion?: number;
}

/** How an attempt ended, as the coordinator commits it. */
export interface Settlement {
  token: number;
  taskId: number;
  outcome: Outcome;
  endedAt: number;
  durationMs: number;
  exitCode: number | null;
  signal: string | null;
  error: string | null;
  outputTail: string | null;
  logPath: string | null;
  /** SUCCESS only: the handler's JSON result (already serialised). */
  result?: string | null;
  /**
   * For failures: when to run again if retries remain, or null to fail the task
   * now (permanent). Ignored for SUCCESS and INTERRUPTED.
   */
  retryAt?: number | null;
  /**
   * When the attempt started running, if later than its claim (it waited queued on its
   * worker); the attempt row's start moves there, so timelines show when it really ran.
   */
  startedAt?: number;
}

export interface Counts {
  total: number;
  pending: number;
  retrying: number;
  running: number;
  succeeded: number;
  failed: number;
  cancelled: number;
}

export interface TaskRow {
  id: number;
  key: string;
  stage: string;
  status: TaskStatus;
  attempts: number;
  maxAttempts: number;
  nextRunAt: number;
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  workerId: string | null;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  lastError: string | null;
  result: string | null;
  payload: TaskPayload;
  fingerprint: string | null;
  /** The split item of a stage task (null without stages) and the stages it needs. */
  item: string | null;
  needs: string[];
}

export interface AttemptRow {
  id: number;
  attempt: number;
  workerId: string;
  host: string;
  pid: number | null;
  startedAt: number;
  endedAt: number | null;
  outcome: Outcome | null;
  exitCode: number | null;
  signal: string | null;
  error: string | null;
  durationMs: number | null;
  outputTail: string | null;
  logPath: string | null;
  /** The batch's job version the attempt was claimed under (its handler); null before versions were recorded. */
  jobVersion: number | null;
}

export interface TaskFilter {
  batchId: number;
  status?: TaskStatus;
  /** Matches when the key matches this predicate (globs are compiled by the caller). */
  keyMatches?: (key: string) => boolean;
  errorContains?: string;
  /** Only tasks attempted at least once (with status PENDING: "retrying"). */
  attemptedOnly?: boolean;
  /** Matches on the last error (e.g. its normalised signature). */
  errorMatches?: (error: string | null) => boolean;
  /** `slowest`: finished tasks, longest last attempt first. Default: creation order. */
  order?: 'created' | 'slowest';
  limit?: number;
}

/** An attempt with its task's key, for reports. */
export interface BatchAttempt extends AttemptRow {
  key: string;
}

export interface PruneResult {
  batches: string[];
  tasks: number;
  attempts: number;
  /** Log files of the removed attempts, for the caller to delete. */
  logPaths: string[];
}

/** A RUNNING task whose lease was released by recovery. */
export interface ReleasedTask {
  key: string;
  owner: string | null;
  failed: boolean;
}

/** What `cancel` did: PENDING tasks ended, RUNNING ones asked to stop, dependents ended with them. */
export interface CancelResult {
  cancelled: number;
  stopping: number;
  dependents: number;
}

export interface StageCounts extends Counts {
  stage: string;
}

export interface ErrorCount {
  error: string;
  count: number;
  /** One task key with this error. */
  example: string;
}

export interface TaskStore {
  readonly location: string;
  /**
   * The store's identity: 32 hex digits, random, written once when the store was created
   * (or upgraded to a version that has one) and never changed. It names the store's log folder.
   */
  readonly identity: string;
  findBatch(name: string): Promise<BatchRecord | undefined>;
  latestBatch(): Promise<BatchRecord | undefined>;
  listBatches(): Promise<BatchRecord[]>;
  /**
   * Create the batch if needed and insert the tasks whose keys it lacks, atomically; note
   * changed fingerprints, and with `rerunChanged` re-queue succeeded tasks whose file changed.
   */
  enqueue(batch: NewBatch, specs: Iterable<TaskSpec>, options?: { rerunChanged?: boolean }): Promise<EnqueueResult>;
  /** Succeeded tasks whose file has changed since they ran (as last observed). */
  changedCount(batchId: number): Promise<number>;
  /**
   * Replace the stored job definition and bump its version (returned); unfinished tasks get the
   * new attempt budget (per stage, with stages). Claims under the old version stop at once.
   */
  updateJob(batchId: number, job: Record<string, unknown>, budget: Budget): Promise<number>;
  /** Pause (nothing new is claimed; running attempts finish) or resume a batch. */
  setPaused(batchId: number, paused: boolean): Promise<void>;
  /** Atomically claim up to one PENDING, due task whose needs succeeded per slot, counting the attempt. */
  claim(request: ClaimRequest): Promise<ClaimedTask[]>;
  /**
   * Extend the leases of every task `owner` holds; returns their tokens, so an owner learns
   * which of its attempts lost their task (taken over while it was frozen).
   */
  heartbeat(owner: string, leaseExpiresAt: number): Promise<number[]>;
  /** settle, then claim, in one transaction: what a coordinator does on every tick. */
  settleAndClaim(settlements: Settlement[], request: ClaimRequest): Promise<{ applied: number[]; claimed: ClaimedTask[] }>;
  /** Commit attempt outcomes in one transaction; returns the tokens that still held their task, in the order given. */
  settle(settlements: Settlement[]): Promise<number[]>;
  /** Current status of the given tasks (the store, not a claim-time copy, decides whether a failure ended a task). */
  statuses(taskIds: number[]): Promise<Map<number, TaskStatus>>;
  /** The owners holding RUNNING tasks in the batch (or all batches), for dead-owner checks. */
  runningOwners(batchId: number | null): Promise<string[]>;
  /**
   * Return to PENDING (or FAILED when out of attempts) tasks whose lease expired or whose
   * owner is dead, never those of `self` (a live coordinator's own) nor of `liveOwners`
   * (live processes on this host, stopped ones included); records LOST.
   */
  releaseStale(batchId: number | null, now: number, deadOwners: string[], self: string, liveOwners?: string[]): Promise<ReleasedTask[]>;
  counts(batchId: number): Promise<Counts>;
  /** Counts per stage of a batch with stages (none for a batch without). */
  stageCounts(batchId: number): Promise<StageCounts[]>;
  /** The earliest `next_run_at` of a PENDING task whose needs are met, or null. */
  nextDueAt(batchId: number): Promise<number | null>;
  /** The last errors of FAILED tasks with their counts, most frequent first. */
  topErrors(batchId: number, limit: number): Promise<ErrorCount[]>;
  listTasks(filter: TaskFilter): Promise<TaskRow[]>;
  getTask(batchId: number, key: string): Promise<TaskRow | undefined>;
  attemptsOf(taskId: number): Promise<AttemptRow[]>;
  /** The batch's attempts, oldest first, at most `limit` (the most recent ones when cut). */
  batchAttempts(batchId: number, limit: number): Promise<{ attempts: BatchAttempt[]; total: number }>;
  /** The same attempts without counting the batch's (a scan of the batch): for `status`'s rates. */
  recentAttempts(batchId: number, limit: number): Promise<BatchAttempt[]>;
  /**
   * Delete finished batches (nothing PENDING or RUNNING) whose last activity is before `before`,
   * in bounded chunks, each its own short transaction (so a concurrent run never waits long for
   * the lock): the batch's attempts, then its tasks, then the batch row. Every chunk re-checks
   * that the batch is still finished and idle, so a prune killed half-way leaves a smaller batch
   * of finished tasks (consistent) that the next prune finishes, and a batch that came back to
   * life meanwhile keeps what is left. With `onChunk`, each chunk's log files are handed over as
   * soon as it is committed (and `logPaths` stays empty); without, they are all in `logPaths`.
   */
  pruneFinished(before: number, onChunk?: (batch: string, logPaths: string[]) => void): Promise<PruneResult>;
  /** Attempt rows in the whole store: the history `prune` would trim. */
  historySize(): Promise<number>;
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
  /** First and last activity of the batch, for rates. */
  activity(batchId: number): Promise<{ firstStartedAt: number | null; lastFinishedAt: number | null }>;
  close(): Promise<void>;
}
