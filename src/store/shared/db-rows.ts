import type { AttemptRow, BatchRecord, ClaimedTask, Counts, Outcome, LostAttempt, StageCounts, TaskRow, TaskStatus } from '../records.js';
import type { Sibling } from './stage-graph.js';
import { parseNeeds } from './json-columns.js';

/**
 * Raw rows as both drivers return them (the same columns in SQLite and PostgreSQL; the
 * PostgreSQL pool parses BIGINT to numbers); converted once here so the rest of the code
 * never sees snake_case.
 */
export interface BatchDbRow {
  id: number;
  name: string;
  source: string;
  job: string;
  created_at: number;
  updated_at: number;
  /** 0/1 in SQLite, a boolean in PostgreSQL. */
  paused: number | boolean;
  job_version: number;
}

export interface TaskDbRow {
  id: number;
  /** Since when its attempts have answered busy in a row (a bigint's text on PostgreSQL), or null. */
  busy_since: number | string | null;
  batch_id: number;
  task_key: string;
  stage: string;
  seq: number;
  payload: string;
  status: TaskStatus;
  attempts: number;
  /** Attempts of the retry budgets before the last reset (retry-failed, --rerun-changed). */
  earlier_attempts: number;
  max_attempts: number;
  next_run_at: number;
  lease_owner: string | null;
  lease_token: number | null;
  lease_expires_at: number | null;
  worker_id: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  last_error: string | null;
  result: string | null;
  fingerprint: string | null;
  item_key: string | null;
  /** JSON array of stage names, or null. */
  needs: string | null;
  /** 0/1 (SQLite) or a boolean (PostgreSQL); absent from a row read before migration 009/007. */
  up_to_date?: number | boolean;
}

export interface AttemptDbRow {
  id: number;
  attempt: number;
  worker_id: string;
  host: string;
  pid: number | null;
  started_at: number;
  ended_at: number | null;
  outcome: Outcome | null;
  exit_code: number | null;
  signal: string | null;
  error: string | null;
  duration_ms: number | null;
  output_tail: string | null;
  log_path: string | null;
  job_version: number | null;
  owner: string;
}

export function toBatch(r: BatchDbRow): BatchRecord {
  return {
    id: r.id,
    name: r.name,
    source: r.source,
    job: JSON.parse(r.job),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    paused: Boolean(r.paused),
    jobVersion: r.job_version,
  };
}

export function toTaskRow(r: TaskDbRow): TaskRow {
  return {
    id: r.id,
    key: r.task_key,
    stage: r.stage,
    seq: r.seq,
    status: r.status,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    nextRunAt: r.next_run_at,
    leaseOwner: r.lease_owner,
    leaseExpiresAt: r.lease_expires_at,
    workerId: r.worker_id,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    lastError: r.last_error,
    result: r.result,
    payload: JSON.parse(r.payload),
    fingerprint: r.fingerprint,
    item: r.item_key,
    needs: parseNeeds(r.needs),
    upToDate: r.status === 'SUCCESS' && Boolean(r.up_to_date),
  };
}

export function toAttemptRow(r: AttemptDbRow): AttemptRow {
  return {
    id: r.id,
    attempt: r.attempt,
    workerId: r.worker_id,
    host: r.host,
    pid: r.pid,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    outcome: r.outcome,
    exitCode: r.exit_code,
    signal: r.signal,
    error: r.error,
    durationMs: r.duration_ms,
    outputTail: r.output_tail,
    logPath: r.log_path,
    jobVersion: r.job_version,
  };
}

/** A task row just claimed, as handed to a worker: `token` is its new attempt's id. */
/** The columns a claim returns (both stores). */
export type ClaimedDbRow = Pick<
  TaskDbRow,
  'id' | 'batch_id' | 'task_key' | 'stage' | 'item_key' | 'needs' | 'seq' | 'payload' | 'attempts' | 'earlier_attempts' | 'max_attempts'
 | 'busy_since'
>;

/** A claimed attempt's number: every attempt the task ever had, earlier retry budgets included (SPEC §6). */
export const attemptNumber = (r: Pick<ClaimedDbRow, 'attempts' | 'earlier_attempts'>): number => r.attempts + r.earlier_attempts;

export function toClaimedTask(r: ClaimedDbRow, token: number, workerId: string, inputs: Record<string, unknown>): ClaimedTask {
  return {
    id: r.id,
    token,
    key: r.task_key,
    stage: r.stage,
    seq: r.seq,
    attempt: attemptNumber(r),
    counted: r.attempts,
    maxAttempts: r.max_attempts,
    payload: JSON.parse(r.payload),
    workerId,
    inputs,
    busySince: r.busy_since === null ? null : Number(r.busy_since),
  };
}

/** One group of a `counts` statement: status, whether attempted (0/1 or boolean), count. */
export interface CountDbRow {
  status: TaskStatus | 'QUEUED';
  tried: boolean | number;
  n: number;
}

/** A task recovery is taking back, with what its lost attempt needs to be cleaned up after. */
export function toLost(t: TaskDbRow, inputs: Record<string, unknown>): LostAttempt {
  return { key: t.task_key, owner: t.lease_owner, token: t.lease_token, stage: t.stage, seq: t.seq, payload: JSON.parse(t.payload), inputs };
}

/**
 * A kept count's bucket (task_counts: SQLite migration 019, PostgreSQL 017) as the group toCounts
 * folds, `status` and `tried`: RETRYING is PENDING tried, QUEUED part of the RUNNING group (a
 * reader adds the QUEUED subset as a row of its own, which toCounts moves out of it).
 */
export const KEPT_GROUP = `CASE bucket WHEN 'RETRYING' THEN 'PENDING' WHEN 'QUEUED' THEN 'RUNNING' ELSE bucket END AS status, bucket = 'RETRYING' AS tried`;

/** Disjoint groups (status × tried) into the counts `status` shows. */
export function toCounts(rows: CountDbRow[]): Counts {
  const c: Counts = { total: 0, pending: 0, retrying: 0, running: 0, queued: 0, succeeded: 0, failed: 0, cancelled: 0 };
  for (const r of rows) {
    const n = Number(r.n);
    // QUEUED is a subset of the RUNNING group (its queued rows), moved out of it: not counted twice.
    if (r.status === 'QUEUED') {
      c.queued += n;
      c.running -= n;
      continue;
    }
    c.total += n;
    if (r.status === 'PENDING') c[r.tried ? 'retrying' : 'pending'] += n;
    else if (r.status === 'RUNNING') c.running += n;
    else if (r.status === 'SUCCESS') c.succeeded += n;
    else if (r.status === 'FAILED') c.failed += n;
    else if (r.status === 'CANCELLED') c.cancelled += n;
  }
  return c;
}

/** Groups of stage × status × tried into per-stage counts, in the order given. */
export function stageCountsOf(rows: (CountDbRow & { stage: string })[]): StageCounts[] {
  const byStage = new Map<string, CountDbRow[]>();
  for (const r of rows) byStage.set(r.stage, [...(byStage.get(r.stage) ?? []), r]);
  return [...byStage].map(([stage, group]) => ({ stage, ...toCounts(group) }));
}

export interface SiblingDbRow {
  id: number;
  stage: string;
  status: TaskStatus;
  needs: string | null;
  last_error: string | null;
}

export function toSibling(r: SiblingDbRow): Sibling {
  return { id: Number(r.id), stage: r.stage, status: r.status, needs: parseNeeds(r.needs), lastError: r.last_error };
}
