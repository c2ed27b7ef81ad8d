/**
 * `--adaptive` (SPEC §10): how many attempts this run keeps running, found by AIMD as TCP finds
 * its window. It starts at one and grows by one per success (doubling per round) up to -j or
 * until an attempt answers busy (or times out). Then it halves, and grows back fast to just
 * below the level that was too much, and from there by one per window of `level` successes.
 * Each time the same level proves too much again, those windows grow longer (×2, up to ×16), so
 * a service that holds steady at its limit is probed less and less often and answers busy
 * rarely. An answer to an attempt started before the last cut, or within a round of it (the
 * time a success takes), is that cut's cause, not a new one; nor does such a success grow it.
 * A success grows the level only while the level is what holds the run back (as many running as
 * it allows): workers still loading, or too little work, prove nothing about the service.
 *
 * A whole number of attempts at once is a coarse measure of a service limited in requests per
 * second (3 at once may be 19/s where 4 are 26/s), so the first cut also sets a pace: the starts
 * per second the run makes at most, 95% of the successes per second just before the cut. The
 * pace grows by 5% (at least 1/s) per second's worth of successes, and is reset the same way at
 * each cut; each time a cut finds about the same rate again, the pace grows half as fast (down
 * to an eighth).
 */
import type { Outcome } from '../store/task-store.js';

/** The most success windows a probe of a level that answered busy before waits. */
const MAX_PATIENCE = 16;
/** How far back the successes per second are counted when a cut sets the pace. */
const PACE_WINDOW_MS = 2000;
const MAX_PACE_PATIENCE = 8;

export interface LevelChange {
  from: number;
  to: number;
  /** The outcome that cut the level (BUSY, TIMEOUT); absent when it grew. */
  cause?: Outcome;
}

export class AdaptiveLevel {
  private level = 1;
  /** Below it the level grows by one per success. */
  private threshold: number;
  /** Successes counted towards the next step at or above the threshold. */
  private credit = 0;
  /** Windows of `level` successes per step above the threshold. */
  private patience = 1;
  /** The level at which the service last answered busy. */
  private ceiling = Number.POSITIVE_INFINITY;
  /** When the level was last cut; the levels since then, by when each began. */
  private cutAt = Number.NEGATIVE_INFINITY;
  private history: [at: number, level: number][] = [[Number.NEGATIVE_INFINITY, 1]];
  /** Starts per second at most, from the first cut on; null: none. */
  private pace: number | null = null;
  private paceCredit = 0;
  private pacePatience = 1;
  /** The successes per second measured at the last cut. */
  private paceCeiling: number | null = null;
  /** About how long a success takes (a moving average): a round, within which a cut's effect is not yet seen. */
  private roundMs = 0;
  /** When each success of the last PACE_WINDOW_MS ended. */
  private successes: number[] = [];

  constructor(private max: number) {
    this.threshold = max;
  }

  /** The attempts this run may keep running now (1…-j). */
  get current(): number {
    return Math.min(this.level, this.max);
  }

  get limit(): number {
    return this.max;
  }

  /** Starts per second at most (found at the first cut), or null before any. */
  get startsPerSecond(): number | null {
    return this.pace;
  }

  /** -j changed (a pool that grew or shrank): the level stays within it. */
  resize(max: number): void {
    this.max = Math.max(1, max);
    this.threshold = Math.min(this.threshold, this.max);
  }

  /**
   * An attempt started at `startedAt` ended with `outcome` at `now`, with `running` attempts
   * running just before it ended (itself among them): the level's change, if any.
   */
  ended(outcome: Outcome, startedAt: number, now: number, running: number): LevelChange | null {
    const from = this.current;
    if (outcome === 'BUSY' || outcome === 'TIMEOUT') {
      if (startedAt < this.cutAt || now <= this.cutAt || now - this.cutAt < this.roundMs) return null;
      const tooMany = this.levelAt(startedAt);
      // The same level (or a lower one) was too much again: probe it less often.
      this.patience = tooMany <= this.ceiling ? Math.min(MAX_PATIENCE, this.ceiling === Number.POSITIVE_INFINITY ? 1 : this.patience * 2) : 1;
      this.ceiling = tooMany;
      this.threshold = Math.max(1, tooMany - 1);
      this.level = Math.max(1, Math.floor(from / 2));
      this.credit = 0;
      this.cutAt = now;
      this.history = [[now, this.level]];
      const rate = this.successRate(now);
      this.pacePatience = this.paceCeiling !== null && rate <= this.paceCeiling * 1.1 ? Math.min(MAX_PACE_PATIENCE, this.pacePatience * 2) : 1;
      this.paceCeiling = rate;
      this.pace = Math.max(0.5, 0.95 * rate);
      this.paceCredit = 0;
      return { from, to: this.current, cause: outcome };
    }
    if (outcome !== 'SUCCESS') return null;
    this.successes.push(now);
    this.roundMs = this.roundMs === 0 ? now - startedAt : this.roundMs + (now - startedAt - this.roundMs) / 8;
    this.growPace();
    if (from >= this.max || running < from || startedAt < this.cutAt) return null;
    if (this.level < this.threshold) this.level++;
    else if (++this.credit >= this.level * this.patience) {
      this.level++;
      this.credit = 0;
    } else return null;
    this.history.push([now, this.level]);
    return { from, to: this.current };
  }

  /** Successes per second over the last PACE_WINDOW_MS (over less when the run is younger). */
  private successRate(now: number): number {
    this.successes = this.successes.filter((t) => t > now - PACE_WINDOW_MS);
    if (this.successes.length === 0) return 0;
    return (this.successes.length * 1000) / Math.max(500, now - this.successes[0]!);
  }

  /** A window of successes (a second's worth at the pace, longer with patience) raises the pace by 5%, at least 1/s. */
  private growPace(): void {
    if (this.successes.length > 256) this.successes = this.successes.slice(-128);
    if (this.pace === null || ++this.paceCredit < Math.ceil(this.pace) * this.pacePatience) return;
    this.pace += Math.max(1, this.pace * 0.05);
    this.paceCredit = 0;
  }

  /** The level in effect at `at` (since the last cut; the first level before it). */
  private levelAt(at: number): number {
    let level = this.history[0]?.[1] ?? this.level;
    for (const [since, l] of this.history) {
      if (since > at) break;
      level = l;
    }
    return Math.min(level, this.max);
  }
}
