/** Watches workers as they start: a boot that hangs or hits a limit, and handlers that keep failing to load. */
import type { ResourceError } from '../errors.js';
import { killGroup } from '../worker/kill-group.js';
import { BOOT_MS, LIMIT_SAID, neverBooted } from './start-failure.js';

/** A handler that fails to load this many times in a row is given up on: the run ends. */
const MAX_LOAD_FAILURES = 5;
/**
 * Workers killed from outside (SIGKILL, SIGTERM, SIGINT, SIGHUP: a user, the OOM killer) before
 * their handler was ready say nothing about the handler: a pool whose workers are killed as they
 * start (a fault test kills one every ~100 ms while a load takes longer under load) keeps
 * replacing them. Still bounded, so a handler whose import always gets its worker OOM-killed
 * ends the run.
 */
const MAX_LOAD_KILLS = 25;
const OUTSIDE_KILLS = new Set(['SIGKILL', 'SIGTERM', 'SIGINT', 'SIGHUP']);

/**
 * Watches a forked worker until it runs its first line (`booted` in protocol.ts): kills one
 * still silent after BOOT_MS, and keeps the first line of its stderr that names a limit. An
 * in-process worker has booted from the start.
 */
export class BootWatch {
  private timedOut = false;
  private limitSaid: string | null = null;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(pid: number | null, private booted: boolean) {
    this.timer = booted
      ? undefined
      : setTimeout(() => {
          this.timedOut = true;
          if (pid) killGroup(pid, 'SIGKILL');
        }, BOOT_MS);
    this.timer?.unref();
  }

  /**
   * A chunk of the worker's stderr. What one that dies before its first line says of a limit
   * (Node's own `pthread_create: Resource temporarily unavailable`) is kept apart: the abort's
   * stack trace follows it.
   */
  heard(text: string): void {
    if (!this.booted) this.limitSaid ??= text.split('\n').find((l) => LIMIT_SAID.test(l))?.trim() ?? null;
  }

  /** The worker runs its own code. */
  up(): void {
    this.booted = true;
    clearTimeout(this.timer);
  }

  /** The worker is gone, or was never there. */
  end(): void {
    clearTimeout(this.timer);
  }

  /**
   * For a worker that died `why` (by `signal`): the machine's limit, when that is why it never
   * came up — it hung, named a limit or aborted (Node aborts, often without a word, when it
   * cannot create a thread). Null for one that died like any other, such as one killed from
   * outside before it booted.
   */
  failure(why: string, signal: NodeJS.Signals | null): ResourceError | null {
    const atLimit = !this.booted && (this.timedOut || this.limitSaid !== null || signal === 'SIGABRT');
    return atLimit ? neverBooted(this.timedOut, why, this.limitSaid) : null;
  }
}

/** Workers that died before their handler was ready, in a row: when the pool stops replacing them. */
export class LoadTally {
  private failures = 0;
  private kills = 0;

  /** A worker's handler loaded: the rows start again. */
  loaded(): void {
    this.failures = 0;
    this.kills = 0;
  }

  /** A worker died (by `signal`, if one killed it) before its handler was ready: whether it was killed from outside. */
  died(signal: NodeJS.Signals | null): boolean {
    const killed = signal !== null && OUTSIDE_KILLS.has(signal);
    if (killed) this.kills++;
    else this.failures++;
    return killed;
  }

  /** Why the handler was given up on, after the last worker died `why`. */
  why(why: string): string {
    return this.kills >= MAX_LOAD_KILLS ? `${this.kills} workers in a row were killed as they loaded it, the last: ${why}` : why;
  }

  /** Whether the handler is given up on: MAX_LOAD_FAILURES in a row, or MAX_LOAD_KILLS kills before it was ready. */
  get givenUp(): boolean {
    return this.failures >= MAX_LOAD_FAILURES || this.kills >= MAX_LOAD_KILLS;
  }
}
