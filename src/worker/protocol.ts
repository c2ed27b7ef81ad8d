/**
 * The coordinator ↔ worker IPC vocabulary, one string-tagged union each way. Errors
 * travel as SerializedError data and are classified by name.
 */
import type { SerializedError } from '../errors.js';
import type { OutputPaths } from '../output/output-path.js';
import type { TemplateTask } from '../template/template-task.js';

/**
 * Many items per command (`-n N`, `-N N`, `-X`, `-m`; SPEC §10): how `{}` and the other item
 * placeholders expand to every item of a group, and at most how many items one group holds.
 */
export interface GroupSpec {
  mode: 'n' | 'N' | 'X' | 'm';
  max: number;
}

/**
 * `pipe`: the command gets its chunk's bytes (or its item) on stdin (`--pipe`). `group`: many
 * items per command. `maxItems`: at most how many tasks one call of a module's `batch` export
 * gets (`--max-items`; the module's own `maxItems` export wins when smaller).
 */
export type HandlerSpec = { kind: 'exec'; template: string; pipe?: true; group?: GroupSpec } | { kind: 'module'; path: string; maxItems?: number };

/** Another item of a group, run by the same command (or `batch` call) as the message it rides on. */
export interface GroupItem extends TemplateTask {
  token: number;
}

/** Everything a worker needs to run one attempt: what `{…}` placeholders read (TemplateTask), and more. */
export interface TaskMessage extends TemplateTask {
  token: number;
  /** Where the full output goes, created only if the attempt prints anything. */
  logFile: string;
  /**
   * Its declared output (`--output`): it writes `temp` (`{out}`, `task.out`); a success is
   * renamed onto `path`. Null without one.
   */
  output: OutputPaths | null;
  /** `--print`: where a copy of its stdout and stderr goes apart (`PREFIX.out`, `PREFIX.err`, print-copy.ts); absent without. */
  print?: string | null;
  /**
   * The other items of its group, in order, after this one (`-n`, a handler's `batch`): one
   * command or call runs them all, reported by one done message under this token.
   */
  more?: GroupItem[];
}

/** One item's outcome in a group's done message: what a handler's `batch` returned for it. */
export interface ItemOutcome {
  ok: boolean;
  result: string | null;
  error: SerializedError | null;
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
   * Stop a running attempt: fire ctx.signal, TERM the process group, KILL after the grace.
   * `token: null` (a shutdown) stops every attempt handed on and drops the queued ones,
   * never started (reported as `dropped`).
   */
  | { type: 'abort'; token: number | null; reason: 'timeout' | 'shutdown' }
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
  /** When it started (this machine's clock, ms), by the process that started it; 0 if it never ran. */
  startedAt: number;
  /**
   * An `--exec` command that exited by itself with a code from 1 to 128 having written nothing
   * at all on stderr (grep finding nothing, diff, test): an answer, not a fault. The
   * coordinator decides what that means (settlement.ts); absent otherwise.
   */
  quiet?: true;
  /**
   * A module's `batch` call: each item's own outcome, in group order (this token's first).
   * Absent for a command (its exit is the whole group's) and for a call that threw.
   */
  items?: ItemOutcome[];
}

export type FromWorker =
  /**
   * The worker process runs its own code: sent first, before any handler loads. A process that
   * never gets this far (its runtime found no thread or descriptor to start with) could not be
   * started, which is the machine's limit, not the handler's fault.
   */
  | { type: 'booted' }
  /** Handlers loaded; `maxItems`: per stage, at most how many items one attempt runs (1, or a group's size). */
  | { type: 'ready'; maxItems?: Record<string, number> }
  | { type: 'load-failed'; error: SerializedError }
  /**
   * An exec attempt started (it may have waited queued in the launcher): its clock starts, and
   * its process group is known, so the coordinator can kill it if the worker dies.
   */
  | { type: 'spawned'; token: number; pgid: number }
  | { type: 'heartbeat'; token: number }
  /**
   * An attempt's command (or handler) ended well and its declared output is being checked and
   * synced now: its clocks stop (--timeout and --heartbeat-timeout cover the command, not the disk).
   */
  | { type: 'ran'; token: number }
  /** An attempt ended (reported before the next starts); `rss`: the worker's peak RSS so far, bytes (0 unless watched). */
  | { type: 'done'; result: DoneMessage; rss: number }
  /** Queued attempts given back (a `drop`, a shutdown): they never started. */
  | { type: 'dropped'; tokens: number[] };
