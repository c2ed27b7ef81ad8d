import type { AttemptStats } from '../store/attempt-stats.js';
import type { BatchRecord, Counts, QueryStore } from '../store/task-store.js';
import { lastUpdateMs } from './batch-status.js';

/** Attempt-duration buckets (ms): from 10 ms to an hour, about three per decade. */
export const DURATION_BOUNDS_MS = [10, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000, 600_000, 1_800_000, 3_600_000];

/** What `metrics` and `run --metrics-file` say of one batch: the same facts as `status --json`. */
export interface BatchMetrics {
  batch: string;
  counts: Counts;
  /** Succeeded tasks that were up to date (nothing ran). */
  upToDate: number;
  /** Nothing PENDING or RUNNING. */
  done: boolean;
  /** The instant of `status --json`'s `updatedAt` (ms). */
  updatedAtMs: number;
  attempts: AttemptStats;
}

/** The reads the facts need: few, so a run can take them from its own store. */
export type MetricsStore = Pick<QueryStore, 'counts' | 'activity' | 'upToDateCount' | 'attemptStats'>;

/**
 * One batch's facts. `attempts`, when given, are the caller's own counters (a run keeps them
 * as it settles: reading a million attempts takes seconds); otherwise they are read.
 */
export async function batchMetrics(store: MetricsStore, batch: BatchRecord, attempts?: AttemptStats): Promise<BatchMetrics> {
  const counts = await store.counts(batch.id);
  const { lastFinishedAt } = await store.activity(batch.id);
  return {
    batch: batch.name,
    counts,
    upToDate: counts.succeeded > 0 ? await store.upToDateCount(batch.id) : 0,
    done: counts.pending + counts.retrying + counts.running + counts.queued === 0,
    updatedAtMs: lastUpdateMs(batch, lastFinishedAt),
    attempts: attempts ?? (await store.attemptStats(batch.id, DURATION_BOUNDS_MS)),
  };
}
