import type { TaskPayload } from '../store/task-store.js';

/** The task a handler receives. */
export interface Task {
  key: string;
  batch: string;
  stage: string;
  /** Absolute path of the file. */
  path: string;
  /** Path relative to the source root. */
  rel: string;
  /** Byte offsets, for chunks of a file source. */
  start?: number;
  end?: number;
  /** An item of a list: its text (without its line end). */
  item?: string;
  /** A JSON Lines item: the parsed record; an integer beyond 2^53 (or out of range) is its text, a string, so no digit is lost. */
  record?: unknown;
  /** The bytes this task is about: its chunk (a file source), its item (a list), or the whole file. */
  read(): Promise<Buffer>;
  /** 1 for the first attempt. */
  attempt: number;
  payload: TaskPayload;
  /** Results of the stages this one needs. */
  inputs: Record<string, unknown>;
  /**
   * With a declared output (`--output`): the temporary path to write the output to. On
   * success splitdance renames it onto the output path; a success that did not write it fails.
   */
  out?: string;
}

export interface TaskContext {
  attempt: number;
  /**
   * The slot the attempt runs in, 1…`-j` (`{%}` of `--exec`, GNU parallel's job slot): no two
   * attempts running at once in one `run` or `worker` share it, so it can pick a per-slot
   * resource (a GPU, a port). Another host's run numbers its own slots from 1.
   */
  slot: number;
  /** Fires on timeout or shutdown: stop and throw. */
  signal: AbortSignal;
  /** Appends a line to the task's captured output. */
  log(...args: unknown[]): void;
  /**
   * A sign of life. With `--heartbeat-timeout D`, an attempt that goes D without calling it is
   * stopped (ctx.signal fires, then its worker is killed after the grace) and recorded
   * TIMEOUT ("no heartbeat for D"); output (console.log, ctx.log) does not count. Cheap: call
   * it as often as you like (a few messages a second leave at most). Without the option it
   * has no effect (leases are renewed for every running attempt on a timer).
   */
  heartbeat(): void;
}

export type Handler = (task: Task, ctx: TaskContext) => unknown | Promise<unknown>;

/**
 * A module's `batch` export (SPEC §10): one call for many tasks, returning one entry per task,
 * in order: its result, or an Error (that task's failure; a `PermanentError` fails it at once).
 * A throw fails the whole call, which is then split to find the tasks that fail on their own.
 */
export type BatchHandler = (tasks: Task[], ctx: TaskContext) => unknown[] | Promise<unknown[]>;
