import type { AttemptRow, BatchRecord, ClaimedTask, Outcome, TaskRow, TaskStatus } from './task-store.js';

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
}

export interface TaskDbRow {
  id: number;
  batch_id: number;
  task_key: string;
  stage: string;
  seq: number;
  payload: string;
  status: TaskStatus;
  attempts: number;
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
  };
}

export function toTaskRow(r: TaskDbRow): TaskRow {
  return {
    id: r.id,
    key: r.task_key,
    stage: r.stage,
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
  };
}

/** A task row just claimed, as handed to a worker: `token` is its new attempt's id. */
export function toClaimedTask(r: TaskDbRow, token: number, workerId: string): ClaimedTask {
  return {
    id: r.id,
    token,
    key: r.task_key,
    stage: r.stage,
    seq: r.seq,
    attempt: r.attempts,
    maxAttempts: r.max_attempts,
    payload: JSON.parse(r.payload),
    workerId,
  };
}
