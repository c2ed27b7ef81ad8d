/** The records the store's verbs take and return: rows, specs, claims, settlements, counts. */
// Leaves (budget.ts, task-status.ts, task-spec.ts import nothing; read-records.ts only those),
// so the verb interfaces, both stores and every caller share these types without an import
// circle. This file holds the batch and the lease (claims, settlements, recovery) and re-exports
// the rest: callers import records from here. All times are milliseconds since the epoch.
import type { Outcome, TaskStatus } from './task-status.js';
import type { TaskPayload } from './task-spec.js';

export type { Budget } from './budget.js';
export { TASK_STATUSES, OUTCOMES, type TaskStatus, type Outcome } from './task-status.js';
export type * from './task-spec.js';
export type * from './read-records.js';

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

/** A batch's stored definition as a peek reads it, before anything is validated or written (peekBatch). */
export interface PeekedBatch {
  job: unknown;
  source: string;
}

export interface EnqueueResult {
  batch: BatchRecord;
  created: boolean;
  inserted: number;
  /** Succeeded tasks whose file changed since (fingerprint), still SUCCESS; with `itemPayloads`, tasks of any status whose payload the source changed, not re-queued. */
  changed: number;
  /** With `itemPayloads`: the key of the first `changed` task (in `seq` order), null when none. */
  changedExample?: string | null;
  /** Tasks whose file (payload) changed, re-queued by `rerunChanged`. */
  requeued: number;
  /** With `countRepeated`: specs that repeated a key given before them in this enqueue (each key is one task). */
  repeated: number;
}

/** A claimed task, as handed to a worker. `token` is the attempt id and the fencing token. */
export interface ClaimedTask {
  id: number;
  token: number;
  key: string;
  stage: string;
  seq: number;
  /** The attempt's number: every attempt the task ever had, earlier retry budgets included (`{attempt}`, `#N`). */
  attempt: number;
  /** Its place in the current retry budget (1 for the first attempt after a `retry-failed`), against `maxAttempts`. */
  counted: number;
  maxAttempts: number;
  payload: TaskPayload;
  workerId: string;
  /** The stored results of the stages it needs (stages only), by stage. */
  inputs: Record<string, unknown>;
  /** Since when its attempts have answered busy in a row (BUSY), or null: `--max-busy` bounds it. */
  busySince: number | null;
}

/** One worker slot asking for a task in a claim. */
export interface ClaimSlot {
  workerId: string;
  pid: number | null;
  /** A place behind an attempt the worker holds already: the task claimed for it waits `queued` until it starts. */
  queued?: boolean;
}

/** An attempt that waited queued on its slot and has started now (its task is running from `at`). */
export interface AttemptStart {
  taskId: number;
  token: number;
  at: number;
}

export interface ClaimRequest {
  batchId: number;
  owner: string;
  host: string;
  now: number;
  leaseMs: number;
  slots: ClaimSlot[];
  /** Attempts that were queued and have started since the last claim: their tasks are running now. */
  started?: AttemptStart[];
  /**
   * The batch's job version the claimer's workers run: nothing is claimed once the batch's
   * stored version differs (checked in the claim's transaction, so an attempt never starts
   * under a definition older than the stored one). Each attempt records the version. Omitted:
   * claim under whatever version is stored.
   */
  jobVersion?: number;
  /**
   * --rate-key: the batch's rate applies per task's rate key, not to the batch. The claim takes
   * only tasks whose key's gate is open at `now` and moves each one's gate on by `spacingMs`
   * (`burst` at most at once, as takeStarts), in the claim's transaction, so every run and
   * worker on the store shares the gates. Omitted: no key gates.
   */
  keyed?: { spacingMs: number; burst: number };
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
   * now (permanent); for BUSY, when to run again. Ignored for SUCCESS and INTERRUPTED.
   */
  retryAt?: number | null;
  /** SUCCESS only: its declared output was up to date, so nothing ran (SPEC §4). */
  upToDate?: boolean;
  /**
   * SUCCESS only: the attempt's declared output, still at its temporary path. Recorded with
   * the success, renamed onto the output only once the commit won (never by a fenced-off
   * attempt), and redone by recovery after a crash between the two.
   */
  outputTemp?: string | null;
  /**
   * When the attempt started running, if later than its claim (it waited queued on its
   * worker); the attempt row's start moves there, so timelines show when it really ran.
   */
  startedAt?: number;
}

/**
 * A settlement the store applied, and its task's status as the same transaction left it: the
 * store, not a claim-time copy, decides whether a failure ended its task (the budget may have
 * changed since the claim; `cancel` makes an interrupted attempt's task CANCELLED).
 */
export interface Applied {
  token: number;
  status: TaskStatus;
}

/** Whether a batch has a task left to finish (PENDING or RUNNING), and when an outcome of it was last committed. */
export interface BatchMoves {
  unfinished: boolean;
  lastFinishedAt: number | null;
}

/** A RUNNING task recovery is taking back: its lost attempt, and what renders that attempt's declared output. */
export interface LostAttempt {
  key: string;
  owner: string | null;
  /** The lost attempt (its id), and what renders its declared output's paths. */
  token: number | null;
  stage: string;
  seq: number;
  payload: TaskPayload;
  /** The stored results of the stages it needs (what an `{inputs…}` output path renders from); absent without stages. */
  inputs?: Record<string, unknown>;
}

/** An owner holding RUNNING tasks: the latest lease end of its tasks (on the store's lease clock), and whether it has passed. */
export interface RunningOwner {
  owner: string;
  leaseEnd: number;
  expired: boolean;
}

/** A task recovery took back, its lost attempt recorded: `failed` when that spent its last attempt. */
export interface ReleasedTask extends LostAttempt {
  failed: boolean;
}

/** A committed success whose declared output may not be in place yet (its rename was not confirmed). */
export interface PendingOutput {
  taskId: number;
  batchId: number;
  key: string;
  /** The committed attempt's temporary file. */
  temp: string;
  /** The output path (the stored result's `out`), or null when the result names none. */
  out: string | null;
}