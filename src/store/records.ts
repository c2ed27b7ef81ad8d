/** The records the store's verbs take and return: rows, specs, claims, settlements, counts. */
// A leaf (budget.ts imports nothing either), so the verb interfaces, both stores and every
// caller share these types without an import circle. All times are milliseconds since the epoch.
export type { Budget } from './budget.js';

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
  /** An item of a list (items source): its text, as the line holds it without its line end. */
  item?: string;
  /** A JSON Lines item: the parsed record (an integer beyond 2^53 is its text, a string; `item` holds the line exactly). */
  record?: unknown;
  /** An item that is not valid UTF-8: its exact bytes, base64 (`item` then holds a lossy text). */
  bytes?: string;
  /**
   * An item given as `:::` / `::::` groups: its values, exactly, one per group (`{1}`, `{2}`…);
   * `item` is them joined by a space (`{}`).
   */
  args?: string[];
  /**
   * A block of stdin (`run - --pipe`): its bytes, stored with the task so nothing needs stdin
   * again; its text when it is valid UTF-8, else base64 with `base64` set. `start` and `end`
   * are its byte offsets in the stream; `path` and `rel` are `-`.
   */
  block?: string;
  base64?: true;
  /** `--colsep` of the list: the regex that splits `item` into `{1}`, `{2}`… (absent: whitespace). */
  colsep?: string;
  /**
   * Re-queued by `--rerun-changed` for a record edited in the list: it runs even where its
   * declared output is in place, since an item's output does not say which record made it.
   */
  rerun?: true;
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

export interface NewBatch {
  name: string;
  source: string;
  job: Record<string, unknown>;
  maxAttempts: number;
}

export interface EnqueueOptions {
  /** Re-queue succeeded tasks whose file changed (`--rerun-changed`). */
  rerunChanged?: boolean;
  /** Count the specs whose key came more than once (a list's repeated items): `repeated`. */
  countRepeated?: boolean;
  /**
   * The tasks run what their payloads hold, not the source as it is now (a list's items): a
   * fingerprint stands for the payload, so a task whose fingerprint the source no longer gives
   * keeps its payload, whatever its status, and counts as `changed`; with `rerunChanged`, every
   * such task not RUNNING takes the new payload and goes back to PENDING with a fresh budget.
   * Of specs repeating a key, the first is the one that counts, as for the insert.
   */
  itemPayloads?: boolean;
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
