/** The tick's one owner of time: ticks run one at a time, when each is asked for, and the run's end and timers. */
import { longInterval, longTimeout, type LongTimer } from '../long-timer.js';
import type { Outage } from './outage.js';
import type { StopReason } from './run-types.js';

/** How long a success may wait for others to share its tick, while every worker holds its next attempt. */
const COALESCE_MS = 2;
/**
 * How long the start of a queued attempt may wait for a tick to carry it to the store (its task
 * shows `queued` until then). Fast attempts end well within it, so their starts ride along with
 * the commits of results and cost no transaction of their own.
 */
const START_MARK_MS = 100;

/** What the runner runs: one tick, and whether a success may wait to share one. */
export interface TickSteps {
  /** One pass of the loop (check, commit, claim, hand out, sleep). */
  tick(): Promise<void>;
  /** Whether a success may wait COALESCE_MS to share a tick: no worker waits for work meanwhile. */
  mayCoalesce(): boolean;
}

/**
 * Runs the coordinator's ticks one at a time: one asked for while another runs is run right
 * after it. A tick runs on setImmediate, so no result waits more than one loop turn — or, for a
 * success while every worker still holds its next attempt, within COALESCE_MS, so one
 * transaction carries what several attempts reported meanwhile: no worker waits for it, and a
 * commit and a claim cost per group. Owns the run's state flags (stopping, finished) and every
 * timer of the run: none may hold the process or tick once the run has its answer. Every timer
 * asks again through `request`, never ticks directly. Delays may come from a user's duration (up
 * to a year): none is a plain setTimeout beyond the short ones here. A store call that fails is
 * waited out while the store is down (`outage`, whose retry alone asks for the next tick then),
 * up to its limit; anything else ends the run.
 */
export class TickRunner {
  /** Why the run stops (a signal, a limit): nothing more is claimed, what runs finishes. */
  stopping: StopReason | null = null;
  /** Set once the run has its answer: nothing may be scheduled after that. */
  private finished = false;
  private ticking = false;
  private again = false;
  private queued = false;
  private coalesce: NodeJS.Timeout | undefined;
  private wake: NodeJS.Timeout | undefined;
  private startMark: NodeJS.Timeout | undefined;
  private timers: LongTimer[] = [];
  private resolve!: (r: StopReason) => void;
  private reject!: (err: unknown) => void;
  /** The run's answer: how it stopped, or the error that ended it. */
  readonly done = new Promise<StopReason>((resolve, reject) => {
    this.resolve = resolve;
    this.reject = reject;
  });

  constructor(
    private readonly steps: TickSteps,
    private readonly outage: Outage,
  ) {}

  /** Whether the run has its answer. */
  get over(): boolean {
    return this.finished;
  }

  /** The run ends with `reason`. */
  finish(reason: StopReason): void {
    this.finished = true;
    this.resolve(reason);
  }

  /** The run ends with an error. */
  fail(err: unknown): void {
    this.finished = true;
    this.reject(err);
  }

  /** Asks for a tick; `soon`: a success, which may wait a moment for others to share its commit. */
  request(soon = false): void {
    // During an outage only the retry timer ends the wait (outcomes meanwhile just queue up).
    if (this.finished || this.outage.waiting) return;
    this.next(soon && !this.stopping && this.steps.mayCoalesce());
  }

  /** A tick in `delayMs` (at least 5 ms): when the next retry is due, or the next poll. */
  wakeIn(delayMs: number): void {
    if (this.finished) return; // a tick still running when the run ended must not leave a timer holding the process
    clearTimeout(this.wake);
    this.wake = setTimeout(() => this.request(), Math.max(delayMs, 5));
  }

  /** A tick within START_MARK_MS, to carry a queued attempt's start to the store if nothing else does sooner. */
  carryStart(): void {
    this.startMark ??= setTimeout(() => {
      this.startMark = undefined;
      this.request();
    }, START_MARK_MS);
  }

  /** Runs `fn` every `ms` until the run ends. */
  every(ms: number, fn: () => void): void {
    this.timers.push(longInterval(fn, ms));
  }

  /** Runs `fn` once in `ms`, unless the run ends first. */
  after(ms: number, fn: () => void): void {
    this.timers.push(longTimeout(fn, ms));
  }

  /**
   * A store call failed: an outage (the server restarting) is waited out with backoff, up to
   * its limit; anything else, or an outage past the limit, ends the run (exit 4 for a StoreError).
   */
  failed(err: unknown): void {
    if (this.finished) return;
    try {
      this.outage.retryLater(
        err,
        () => this.request(),
        (pastLimit) => {
          if (!this.finished) this.fail(pastLimit);
        },
      );
    } catch (fatal) {
      this.fail(fatal);
    }
  }

  /** The run is over: no timer may hold the process or tick. */
  cancel(): void {
    this.outage.cancel();
    this.timers.forEach((t) => t.cancel());
    clearTimeout(this.wake);
    clearTimeout(this.coalesce);
    clearTimeout(this.startMark);
  }

  /** A tick on the next loop turn (one at a time); with `coalesce`, within COALESCE_MS instead. */
  private next(coalesce: boolean): void {
    if (this.queued) return;
    if (coalesce) {
      this.coalesce ??= setTimeout(() => {
        this.coalesce = undefined;
        this.request();
      }, COALESCE_MS);
      return;
    }
    clearTimeout(this.coalesce);
    this.coalesce = undefined;
    this.queued = true;
    setImmediate(() => {
      this.queued = false;
      void this.run();
    });
  }

  /** Ticks until none was asked for meanwhile; a tick asked for while one runs runs right after it. */
  private async run(): Promise<void> {
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    try {
      do {
        if (this.finished) return;
        this.again = false;
        await this.steps.tick();
      } while (this.again);
    } catch (err) {
      this.failed(err);
    } finally {
      this.ticking = false;
    }
  }
}
