/**
 * setTimeout / setInterval for delays of any length. Node clamps a delay above 2^31-1 ms
 * (24.8 days) to 1 ms and fires at once (with a TimeoutOverflowWarning), so a plain
 * `setTimeout(kill, 25 days)` kills at once. A long delay is chained in chunks below that
 * limit, each aimed at one monotonic deadline (performance.now(), the clock Node's timers
 * run on, so a wall-clock jump moves nothing). A chunk that ends before the deadline (a
 * long delay's earlier chunks, or Node firing a fraction of a millisecond early) arms the
 * next one: the callback never runs before its delay has passed.
 *
 * It lives beside errors.ts, below every layer, so the coordinator, the CLI and the worker
 * can all use it.
 */

/** The longest delay Node's timers take as written. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface LongTimer {
  /** Like clearTimeout / clearInterval; safe to call more than once, or from the callback. */
  cancel(): void;
  /** Like Timeout.unref(): this timer alone does not keep the process alive (every chunk). */
  unref(): this;
  ref(): this;
  hasRef(): boolean;
}

export interface LongTimerOptions {
  /** The longest single setTimeout in the chain; tests shorten it to watch the chaining. */
  chunkMs?: number;
}

/** Runs `fn` once, `delayMs` from now (never earlier). */
export function longTimeout(fn: () => void, delayMs: number, options: LongTimerOptions = {}): LongTimer {
  return new Chain(fn, delayMs, false, options.chunkMs ?? MAX_TIMER_MS);
}

/** Runs `fn` every `periodMs`, each period counted from the end of the previous run (never shorter, however it is measured). */
export function longInterval(fn: () => void, periodMs: number, options: LongTimerOptions = {}): LongTimer {
  return new Chain(fn, periodMs, true, options.chunkMs ?? MAX_TIMER_MS);
}

class Chain implements LongTimer {
  private handle: NodeJS.Timeout | undefined;
  private deadline: number;
  private refed = true;
  private cancelled = false;

  constructor(
    private readonly fn: () => void,
    private readonly delayMs: number,
    private readonly repeat: boolean,
    private readonly chunkMs: number,
  ) {
    this.deadline = performance.now() + delayMs;
    this.arm();
  }

  cancel(): void {
    this.cancelled = true;
    clearTimeout(this.handle);
  }

  unref(): this {
    this.refed = false;
    this.handle?.unref();
    return this;
  }

  ref(): this {
    this.refed = true;
    this.handle?.ref();
    return this;
  }

  hasRef(): boolean {
    return this.refed && !this.cancelled;
  }

  private arm(): void {
    const left = Math.max(0, Math.ceil(this.deadline - performance.now()));
    this.handle = setTimeout(() => this.step(), Math.min(left, this.chunkMs));
    if (!this.refed) this.handle.unref();
  }

  private step(): void {
    if (this.cancelled) return;
    if (performance.now() < this.deadline) return this.arm();
    if (!this.repeat) return this.fn();
    try {
      this.fn();
    } finally {
      // Armed once the callback has returned (unless it cancelled): the next period starts after
      // everything this run did, so no two runs are closer than the period, measured anywhere in them.
      if (!this.cancelled) {
        this.deadline = performance.now() + this.delayMs;
        this.arm();
      }
    }
  }
}
