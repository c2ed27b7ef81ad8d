/**
 * What the store's reading verbs return and take: counts, task and attempt rows, the task
 * filter, error groups, attempt statistics, and what prune and cancel did. All times are
 * milliseconds since the epoch.
 */
import type { Outcome, TaskStatus } from './task-status.js';
import type { TaskPayload } from './task-spec.js';

/**
 * Disjoint counts that add up to `total`. `running` and `queued` are both RUNNING tasks
 * (claimed, their attempt counted): `queued` ones wait behind another attempt on their slot.
 */
export interface Counts {
  total: number;
  pending: number;
  retrying: number;
  running: number;
  queued: number;
  succeeded: number;
  failed: number;
  cancelled: number;
}

/** A task's outcome as `results` lists it: five columns, no payload. */
export interface TaskOutcome {
  key: string;
  stage: string;
  status: TaskStatus;
  lastError: string | null;
  /** The stored result (JSON text), or null. */
  result: string | null;
}

export interface TaskRow {
  id: number;
  key: string;
  stage: string;
  /** `{#}`: its sequence number in its batch. */
  seq: number;
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
  /** SUCCESS without running: its declared output was up to date. */
  upToDate: boolean;
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
  /** The coordinator (a `run` or a `worker`) that made the attempt: its lease owner. */
  owner: string;
}

export interface PruneResult {
  batches: string[];
  tasks: number;
  attempts: number;
  /** Log files of the removed attempts, for the caller to delete. */
  logPaths: string[];
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

/**
 * What the ended attempts of a batch add up to, for `metrics`: counts per outcome and a
 * duration histogram. Both stores compute it in SQL (one pass over the batch's attempts)
 * and fold the grouped rows the same way (attempt-stats.ts).
 */
export interface AttemptStats {
  /** Ended attempts per outcome; every outcome is present (0 when none). Running ones are not counted. */
  outcomes: Record<Outcome, number>;
  /** The bounds asked for (ms). */
  boundsMs: number[];
  /** Cumulative: `buckets[i]` ended attempts with a recorded duration ≤ `boundsMs[i]`. */
  buckets: number[];
  /** Ended attempts with a recorded duration (a LOST attempt has none until a late report), and their sum. */
  count: number;
  sumMs: number;
}
