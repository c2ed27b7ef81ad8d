import { parseOwner } from '../lease-owner.js';
import type { BatchAttempt, BatchRecord, Counts, Outcome, QueryStore, StageCounts } from '../store/task-store.js';
import { hasStages, inPipelineOrder, learnedWorkOf, retriesAhead } from './batch-status.js';
import { etaSeconds } from './busy-rate.js';
import { liveLevels, type LiveLevel } from './adaptive-levels.js';
import { ownerHolds, type OwnerHold } from './owner-state.js';

/**
 * The facts `watch` shows on every tick, no formatting here. Each tick makes only bounded,
 * index-backed reads, so watching a million-task batch does not slow the run it watches:
 * the counts (the covering index the coordinator's own loop counts with), the longest-running
 * RUNNING tasks (through the index of RUNNING rows only), and the batch's most recent attempts
 * (a walk of the attempts newest first that stops at RECENT_ATTEMPTS) when something failed.
 */

/** How far back "rate over the last minute" looks. */
const RATE_WINDOW_MS = 60_000;
/** Attempts read per tick to find new failures (newest first, bounded). */
const RECENT_ATTEMPTS = 300;
/** The first tick's look back: failures from before the watch began. */
const FIRST_LOOK_ATTEMPTS = 3000;
const FAILED_OUTCOMES: ReadonlySet<Outcome> = new Set(['FAILED', 'TIMEOUT', 'CRASHED', 'LOST']);

interface RunningTask {
  key: string;
  workerId: string | null;
  /** The machine of the coordinator holding the lease ('' when unknown). */
  host: string;
  startedAt: number;
  elapsedMs: number;
}

export interface RecentFailure {
  key: string;
  attempt: number;
  outcome: Outcome;
  error: string | null;
  /** When it ended (when it started for a LOST attempt, whose end is unknown). */
  at: number;
  workerId: string | null;
  host: string;
}

export interface LiveFacts extends Counts {
  batch: string;
  source: string;
  /** Wall time of this tick. */
  at: number;
  done: boolean;
  finished: number;
  open: number;
  /** Counts per stage (empty for a batch without stages). */
  stages: StageCounts[];
  /** Tasks finished per second over the last minute of wall time; null until two ticks exist. */
  ratePerSecond: number | null;
  /** The span the rate was measured over (ms), at most RATE_WINDOW_MS. */
  rateSpanMs: number;
  etaSeconds: number | null;
  /** The longest-running tasks first, at most `runningCap`; `moreRunning` counts the rest. */
  runningTasks: RunningTask[];
  moreRunning: number;
  /** Coordinators on this machine holding RUNNING tasks while stopped or dead (the others are not listed). */
  strandedOwners: OwnerHold[];
  /** --adaptive: the level each run and worker keeps running at now (empty without). */
  adaptive: LiveLevel[];
  /** The latest failed attempts, newest first, at most `failureCap`. */
  failures: RecentFailure[];
}

interface Sample {
  at: number;
  finished: number;
}

/**
 * A batch followed over time. "Rate over the last minute" is the difference of the finished
 * count (SUCCESS + FAILED + CANCELLED) between this tick and the oldest tick less than a
 * minute old, over the wall time between them: it costs no read beyond the counts, and a
 * paused or stalled batch shows its rate falling to 0 (an ETA disappears with it). Failures
 * seen on earlier ticks are remembered, so one that scrolled out of the recent attempts
 * stays listed until newer ones replace it.
 */
export class LiveView {
  private samples: Sample[] = [];
  private failures = new Map<string, RecentFailure>();
  private first = true;

  constructor(
    private readonly store: QueryStore,
    private readonly batch: BatchRecord,
    private readonly caps: { running: number; failures: number } = { running: 10, failures: 5 },
  ) {}

  async tick(now: number = Date.now()): Promise<LiveFacts> {
    const c = await this.store.counts(this.batch.id);
    const finished = c.succeeded + c.failed + c.cancelled;
    const open = c.pending + c.retrying + c.running + c.queued;
    const stages = hasStages(this.batch) ? await this.store.stageCounts(this.batch.id) : [];
    const running = c.running > 0 ? await this.store.runningTasks(this.batch.id, this.caps.running) : [];
    // The RUNNING rows only (bounded by the slots of the coordinators holding them).
    const holds = c.running + c.queued > 0 ? ownerHolds(await this.store.listTasks({ batchId: this.batch.id, status: 'RUNNING' })) : [];
    if (c.failed + c.retrying + c.cancelled > 0) {
      // The first look goes further back, once, so failures from before the watch began show too.
      const recent = await this.store.recentAttempts(this.batch.id, this.first ? FIRST_LOOK_ATTEMPTS : RECENT_ATTEMPTS);
      for (const a of recent) if (a.outcome && FAILED_OUTCOMES.has(a.outcome)) this.failures.set(`${a.key}#${a.attempt}`, failureOf(a));
      this.first = false;
    }
    const failures = [...this.failures.values()].sort((a, b) => b.at - a.at).slice(0, this.caps.failures);
    this.failures = new Map(failures.map((f) => [`${f.key}#${f.attempt}`, f]));

    this.samples = this.samples.filter((s) => s.at >= now - RATE_WINDOW_MS && s.finished <= finished);
    this.samples.push({ at: now, finished });
    const base = this.samples[0]!;
    const spanMs = now - base.at;
    const rate = spanMs > 0 ? ((finished - base.finished) * 1000) / spanMs : null;
    // The backoff still ahead bounds the ETA from below (two index reads, only while something waits for a retry).
    const ahead = c.retrying > 0 && rate ? await retriesAhead(this.store, this.batch, c.retrying, await this.store.nextDueAt(this.batch.id), now) : undefined;

    const byAge = running
      .map((t) => ({ key: t.key, workerId: t.workerId, host: hostOf(t.leaseOwner), startedAt: t.startedAt ?? now, elapsedMs: Math.max(0, now - (t.startedAt ?? now)) }))
      .sort((a, b) => b.elapsedMs - a.elapsedMs);
    // Not done while a committed success's declared output waits to be renamed into place.
    const done = open === 0 && (c.succeeded === 0 || (await this.store.pendingOutputs(this.batch.id)).length === 0);
    return {
      batch: this.batch.name,
      source: this.batch.source,
      at: now,
      ...c,
      done,
      finished,
      open,
      stages: inPipelineOrder(this.batch, stages),
      ratePerSecond: rate,
      rateSpanMs: spanMs,
      etaSeconds: etaSeconds(open, rate, ahead, rate ? await learnedWorkOf(this.store, this.batch, open) : undefined),
      runningTasks: byAge.slice(0, this.caps.running),
      moreRunning: Math.max(0, c.running - Math.min(byAge.length, this.caps.running)),
      strandedOwners: holds.filter((h) => h.state === 'dead' || h.state === 'stopped'),
      adaptive: open > 0 ? await liveLevels(this.store, this.batch, now) : [],
      failures,
    };
  }
}

function failureOf(a: BatchAttempt): RecentFailure {
  return { key: a.key, attempt: a.attempt, outcome: a.outcome!, error: a.error, at: a.endedAt ?? a.startedAt, workerId: a.workerId, host: a.host };
}

function hostOf(owner: string | null): string {
  return (owner ? parseOwner(owner)?.host : undefined) ?? '';
}
