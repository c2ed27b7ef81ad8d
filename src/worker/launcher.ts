/**
 * How a slot starts its `--exec` commands. There is one way to run an attempt (run-exec.ts)
 * and two launchers behind this interface: the spawner helper (helper-launcher.ts) and
 * Node's own spawn (node-launcher.ts), used where the helper is not built. Both hold the
 * slot's queue: a command handed over starts the moment the one before it exits, without
 * waiting for its worker or the coordinator, and both run a direct argv's shell fallback
 * themselves, in its turn.
 *
 * A launcher whose helper died has taken its worker with it: the worker dies too (its
 * running attempt CRASHED, its queued ones INTERRUPTED), wherever the worker lives.
 */

import type { TaskInput } from './task-bytes.js';

/** One command to run in its turn. */
export interface LaunchRequest {
  /** A simple command's words, or ['/bin/sh', '-c', line]. */
  argv: string[];
  /** For a direct argv: the shell line to run instead when argv[0] cannot be executed. */
  fallback: string | null;
  /** Set over the worker's environment. */
  vars: Record<string, string>;
  /** Where its output goes (created only if it prints anything). */
  logFile: string;
  /** `--pipe`: what its stdin reads (else /dev/null). Only the NodeLauncher feeds it. */
  stdin?: TaskInput;
  /** `--print`: also a copy of stdout and of stderr apart (print-copy.ts); only Node's spawn sees them apart. */
  print?: string | null;
}

export type Launched =
  /** It ran and ended: exit code, or the signal that killed it. */
  | {
      kind: 'ran';
      code: number | null;
      signal: NodeJS.Signals | null;
      outputTail: string | null;
      logPath: string | null;
      /** Why its output has no log or only part of one (a full disk): shown after the tail. */
      note: string | null;
      /** Something that may explain a failure besides the command itself. */
      cause: string | null;
      /** `--print`: why its output could not be kept for printing (a full TMPDIR); the attempt fails with it. */
      unprinted?: string | null;
      /** When it exited (ms, this machine's clock), however late that was learned. */
      endedAt: number;
      /** Whether processes of its group were left running when it exited (null: not known). */
      lingers: boolean | null;
      /** Whether it wrote anything on stderr (null: not known, e.g. its output was discarded). */
      wroteStderr: boolean | null;
    }
  /**
   * It never ran: an errno-style code (ENOENT…) and the whole message; `retryable: false`
   * when running it again cannot help (E2BIG: the same task gives the same arguments).
   */
  | { kind: 'not-started'; code: string; message: string; retryable?: boolean }
  /** Given back unstarted (dropQueued). */
  | { kind: 'dropped' }
  /** The launcher's helper died (by `signal`, if one killed it); whether the command ran is unknown. */
  | { kind: 'died'; signal: NodeJS.Signals | null };

export interface Launcher {
  /** Queues the command: it starts once every command queued before it has exited. */
  launch(request: LaunchRequest): Launch;
  /** Gives back every queued command that has not started: each ends `dropped`. */
  dropQueued(): void;
}

/**
 * One launched command, as one stream: its start — its pid, which is also its process group,
 * and when it started (ms) — then its end. The launcher (for the helper, its spawner client)
 * feeds it; run-exec and its worker listen. A start is told synchronously, in the very turn
 * the launcher learns it, to each listener in the order it subscribed, and at once to one that
 * subscribes later: an attempt aborted while still queued is TERMed before anything else runs.
 */
export class Launch {
  /** How it ended: ran, never started, dropped, or its launcher died. */
  readonly ended: Promise<Launched>;
  private start: { pgid: number; at: number } | null = null;
  private readonly listeners: ((pgid: number, at: number) => void)[] = [];
  private finish!: (end: Launched | Promise<Launched>) => void;

  constructor() {
    this.ended = new Promise((resolve) => (this.finish = resolve));
  }

  /** Calls `listener` when it starts, or now if it has; never for one that does not start. */
  onStart(listener: (pgid: number, at: number) => void): void {
    if (this.start) listener(this.start.pgid, this.start.at);
    else this.listeners.push(listener);
  }

  /** The launcher's side: it has started (told once). */
  started(pgid: number, at: number): void {
    if (this.start) return;
    this.start = { pgid, at };
    for (const listener of this.listeners.splice(0)) listener(pgid, at);
  }

  /** The launcher's side: how it ended. */
  end(end: Launched | Promise<Launched>): void {
    this.finish(end);
  }
}
