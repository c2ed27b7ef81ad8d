/** How long a coordinator whose claim left slots empty waits before it looks again: a poll that backs off. */

/** The longest an idle coordinator waits between looks (docs/postgres-fleet.md: what idle hosts cost). */
export const IDLE_POLL_MAX_MS = 10_000;

/**
 * The wait after a claim that left slots empty, when no retry is due sooner. It starts at the
 * poll interval and doubles with each look in a row that finds nothing and the batch standing
 * still (no outcome committed since the last look), up to a third of the lease (so a remote
 * host's lapsed lease is taken over within a third of a lease of lapsing, as a live holder
 * renews it every third) and IDLE_POLL_MAX_MS. A look that finds work, or the batch moving
 * (other hosts settling its tasks, so its end may be near), starts again at the poll interval. While another live
 * coordinator on this machine holds tasks of the batch, it stays at the poll interval: if that
 * process dies, its tasks are taken back within a poll (I8), and only a local owner can be
 * proven dead at once.
 */
export class IdlePoll {
  private misses = 0;
  private readonly capMs: number;
  /** What the batch looked like at the last look (when its last outcome was committed), null when not known. */
  private seen: string | null = null;

  constructor(
    private readonly pollMs: number,
    leaseMs: number,
  ) {
    this.capMs = Math.max(pollMs, Math.min(IDLE_POLL_MAX_MS, Math.floor(leaseMs / 3)));
  }

  /** A look found work (a claim, or tasks taken back from a dead owner): poll at the interval again. */
  found(): void {
    this.misses = 0;
  }

  /**
   * The wait before the next look after one that found nothing. `watchful`: a live local owner
   * holds tasks of the batch, or an owner's lease passed and its renewals are being watched
   * (either may free tasks at any moment); `batch`: what the batch looks like now (any string that changes
   * when an outcome is committed: the coordinator gives the last one's time), or null when this
   * look did not read it.
   */
  next(watchful: boolean, batch: string | null = null): number {
    if (batch !== null) {
      if (batch !== this.seen) this.misses = 0;
      this.seen = batch;
    }
    if (watchful) {
      this.misses = 0;
      return this.pollMs;
    }
    const wait = Math.min(this.pollMs * 2 ** this.misses, this.capMs);
    if (wait < this.capMs) this.misses++;
    return wait;
  }
}
