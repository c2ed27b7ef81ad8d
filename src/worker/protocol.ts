/**
 * The coordinator ↔ worker IPC vocabulary, one string-tagged union each way. Errors
 * travel as SerializedError data and are classified by name.
 */
import type { SerializedError } from '../errors.js';
import type { OutputPaths } from '../output/output-path.js';
import type { TemplateTask } from '../template/template-task.js';

/** `pipe`: the command gets its chunk's bytes (or its item) on stdin (`--pipe`). */
export type HandlerSpec = { kind: 'exec'; template: string; pipe?: true } | { kind: 'module'; path: string };

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
}

export type FromWorker =
  /**
   * The worker process runs its own code: sent first, before any handler loads. A process that
   * never gets this far (its runtime found no thread or descriptor to start with) could not be
   * started, which is the machine's limit, not the handler's fault.
   */
  | { type: 'booted' }
  | { type: 'ready' }
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
