/** How many attempts a coordinator may start now: the batch's --rate, `set -j N` and --adaptive, as stored now. */
import type { Rate } from '../job/rate.js';
import { grant } from '../store/shared/rate-gate.js';
import { LEVEL_REFRESH_MS } from '../store/task-spec.js';
import type { LeaseStore, Settlement } from '../store/task-store.js';
import { AdaptiveLevel } from './adaptive.js';

/** What the batch's stored definition says now (upkeep.ts reads it at each look at the batch). */
export interface FlowSettings {
  /** --rate: at most so many attempt starts per period for the batch, on every host; null: none. */
  rate: Rate | null;
  /** --rate-key: the rate applies per task's rate key (the store's key gates in the claim), not to the batch. */
  rateKey: boolean;
  /** `splitdance set -j N`: at most N attempts running here; null: the run's -j. */
  limit: number | null;
  /** --adaptive: AIMD on how many run here (and on the rate). */
  adaptive: boolean;
}

export class FlowLimits {
  private settings: FlowSettings;
  private level: AdaptiveLevel | null = null;
  /** The level last written to the store, and when. */
  private published: { level: number; pace: number | null; at: number } | null = null;
  private saidCut = false;
  /** The most workers this run was given: its -j, or a larger `set -j`. */
  private widest: number;
  /** When the --adaptive pace lets the next attempt start (this run's own gate, not the store's). */
  private paceNext: number | null = null;

  constructor(
    settings: FlowSettings,
    /** The run's -j: the most --adaptive grows to. */
    private readonly slots: number,
    private readonly note: (m: string) => void,
  ) {
    this.settings = settings;
    // A `set -j` above the run's own widens the pool at the run's first look at the batch (follow).
    this.widest = slots;
    if (settings.adaptive) this.level = new AdaptiveLevel(this.j);
  }

  /**
   * The batch's settings as stored now (`splitdance set` changes them while runs go on).
   * Returns how many workers the run should hold when `set -j` gave it more than it has yet
   * (`widened` once the pool has them).
   */
  follow(settings: FlowSettings): number | null {
    this.settings = settings;
    const j = this.j;
    if (settings.adaptive) (this.level ??= new AdaptiveLevel(j)).resize(j);
    else this.level = null;
    return j > this.widest ? j : null;
  }

  /** The pool may now hold `size` workers (follow asked for them). */
  widened(size: number): void {
    this.widest = Math.max(this.widest, size);
  }

  /** Whether --adaptive is on (what it needs of each ending is counted only then). */
  get adaptive(): boolean {
    return this.level !== null;
  }

  /** The -j the batch runs at here now: `set -j N`'s N, else the run's own. */
  private get j(): number {
    return this.settings.limit ?? this.slots;
  }

  /** Whether anything limits starts: then only idle workers are given an attempt (one queued behind another would start late). */
  get holds(): boolean {
    return this.settings.rate !== null || this.cap !== null || (this.level?.startsPerSecond ?? null) !== null;
  }

  /** At most this many attempts running here now, or null for all the pool's places. */
  get cap(): number | null {
    // Below the pool's size: `set -j N` under its workers, or `set -j none` after one above.
    const j = this.j < this.widest ? this.j : null;
    // --adaptive at the batch's -j holds nothing back: queued attempts are allowed again.
    const level = this.level && this.level.current < this.j ? this.level.current : null;
    return j === null ? level : level === null ? j : Math.min(j, level);
  }

  /** The batch's --rate (shared by every host; --adaptive's pace works below it, on this run alone); null under --rate-key. */
  get rate(): Rate | null {
    return this.settings.rateKey ? null : this.settings.rate;
  }

  /** The rate each --rate-key key gets, or null when the rate is the batch's (or there is none). */
  get keyed(): Rate | null {
    return this.settings.rateKey ? this.settings.rate : null;
  }

  /** Of `want` starts at `now`, how many the --adaptive pace allows, and when the next may start. */
  paced(want: number, now: number): { granted: number; wakeAt: number | null } {
    const pace = this.level?.startsPerSecond ?? null;
    if (pace === null || want === 0) return { granted: want, wakeAt: null };
    const gate = grant(this.paceNext, want, now, 1000 / pace, 2); // 2: a tick that comes late makes up its start
    if (gate.granted > 0) this.paceNext = gate.next;
    return { granted: gate.granted, wakeAt: gate.granted < want ? gate.wakeAt : null };
  }

  /**
   * An attempt ended (before its commit), `running` attempts running just before (itself among
   * them): --adaptive counts a busy answer or a timeout against the level, a success for it.
   * A group's command (or `batch` call) is one attempt: busy if it answered busy (as a whole),
   * timed out if any item did, else a success if any item succeeded.
   */
  ended(items: Settlement[], running: number): void {
    if (!this.level || items.length === 0) return;
    const outcome = items.some((s) => s.outcome === 'TIMEOUT')
      ? 'TIMEOUT'
      : items.every((s) => s.outcome === 'BUSY')
        ? 'BUSY'
        : items.some((s) => s.outcome === 'SUCCESS')
          ? 'SUCCESS'
          : items[0]!.outcome;
    const startedAt = Math.min(...items.map((s) => s.endedAt - s.durationMs));
    const now = Math.max(...items.map((s) => s.endedAt));
    const change = this.level.ended(outcome, startedAt, now, running);
    if (!change?.cause || this.saidCut) return;
    this.saidCut = true;
    const pace = this.level.startsPerSecond;
    const starts = pace !== null ? `, ${pace.toFixed(1)} starts/s` : '';
    this.note(`--adaptive: an attempt ended ${change.cause}: at most ${change.to} of ${this.level.limit} running at once${starts}; growing back as attempts succeed`);
  }

  /** Writes the level for status and watch when it changed or is getting old; removes it when --adaptive is off (or the run is over: `end`). */
  async publish(store: Pick<LeaseStore, 'publishLevel'>, batchId: number, owner: string, now: number, end = false): Promise<void> {
    const level = end ? null : this.level;
    if (!level) {
      if (this.published) await store.publishLevel(batchId, owner, null, now);
      this.published = null;
      return;
    }
    const pace = level.startsPerSecond === null ? null : Math.round(level.startsPerSecond * 10) / 10;
    if (this.published?.level === level.current && this.published.pace === pace && now - this.published.at < LEVEL_REFRESH_MS) return;
    await store.publishLevel(batchId, owner, { level: level.current, max: level.limit, pace }, now);
    this.published = { level: level.current, pace, at: now };
  }
}
