/** How a command waiting for something to appear (a store, a batch, new work) spaces its looks. */

/**
 * The wait between looks that found nothing. It starts at `firstMs` and doubles with each miss
 * in a row, up to `maxMs` (never above it: that bound is what an idle `worker --follow` costs a
 * shared server per look, docs/postgres-fleet.md, and how late it starts on new work); a look
 * that found something starts it again at `firstMs`. With `maxMs` equal to `firstMs` (the
 * default) it is a fixed interval. Waits themselves take the command's AbortSignal (signals.ts
 * `pause`), so a signal ends one at once, not at its end.
 */
export class PollBackoff {
  private nextMs: number;

  constructor(
    readonly firstMs: number,
    readonly maxMs: number = firstMs,
  ) {
    this.nextMs = firstMs;
  }

  /** The wait before the next look, after one that found nothing. */
  next(): number {
    const wait = this.nextMs;
    this.nextMs = Math.min(this.nextMs * 2, this.maxMs);
    return wait;
  }

  /** A look found something: the next wait is `firstMs` again. */
  found(): void {
    this.nextMs = this.firstMs;
  }

  /** "every 500 ms", "every 2–10 s": what a command says it does while it waits. */
  describe(): string {
    if (this.maxMs === this.firstMs) return `every ${this.firstMs} ms`;
    return `every ${this.firstMs / 1000}–${this.maxMs / 1000} s`;
  }
}
