/**
 * The coordinator ↔ worker IPC vocabulary, one string-tagged union each way. Errors
 * travel as SerializedError data and are classified by name.
 */
import type { SerializedError } from '../errors.js';
import type { TaskPayload } from '../store/task-store.js';

export type HandlerSpec = { kind: 'exec'; template: string } | { kind: 'module'; path: string };

/** Everything a worker needs to run one attempt; also what `{…}` placeholders read. */
export interface TaskMessage {
  token: number;
  key: string;
  batch: string;
  stage: string;
  seq: number;
  attempt: number;
  payload: TaskPayload;
  /** The stored results of the stages it needs, by stage (empty without stages). */
  inputs: Record<string, unknown>;
  /** Where the full output goes, created only if the attempt prints anything. */
  logFile: string;
}

export type ToWorker =
  /**
   * The handler of every stage ('' for a batch without stages); `watchMemory`: report the
   * peak RSS with each outcome (--max-worker-memory), else 0 (a getrusage() call per attempt).
   */
  | { type: 'load'; handlers: Record<string, HandlerSpec>; killGraceMs: number; watchMemory: boolean }
  /** Attempts to run one after another, in order, after those already queued. */
  | { type: 'run'; tasks: TaskMessage[] }
  /**
   * Stop the running attempt: fire ctx.signal, TERM the process group, KILL after the grace.
   * A shutdown also drops the queued attempts, never started (reported as `dropped`).
   */
  | { type: 'abort'; token: number; reason: 'timeout' | 'shutdown' }
  /** Give back the queued attempts (reported as `dropped`); the running one goes on. */
  | { type: 'drop' };

/** How one attempt ended, as the worker saw it. */
export interface DoneMessage {
  token: number;
  ok: boolean;
  /** JSON text of the handler's result (SUCCESS only). */
  result: string | null;
  error: SerializedError | null;
  exitCode: number | null;
  signal: string | null;
  outputTail: string | null;
  logPath: string | null;
  durationMs: number;
}

export type FromWorker =
  | { type: 'ready' }
  | { type: 'load-failed'; error: SerializedError }
  /** An exec attempt's process group, so the coordinator can kill it if the worker dies. */
  | { type: 'spawned'; token: number; pgid: number }
  | { type: 'heartbeat'; token: number }
  /** An attempt ended (reported before the next starts); `rss`: the worker's peak RSS so far, bytes (0 unless watched). */
  | { type: 'done'; result: DoneMessage; rss: number }
  /** Queued attempts dropped by a shutdown: they never started. */
  | { type: 'dropped'; tokens: number[] };
