/** What a batch's ended attempts add up to (`AttemptStats`): both stores' grouped rows folded the same way, and a run's own count. */
import { OUTCOMES, type AttemptStats, type Outcome } from './records.js';

export type { AttemptStats };

/** One grouped row: `bucket` is how many bounds lie below the duration (NULL without one). */
export interface AttemptStatsRow {
  outcome: Outcome;
  bucket: number | string | null;
  n: number | string;
  sum_ms: number | string | null;
}

/** Bounds must be whole, ascending milliseconds: both stores bucket integers against them. */
export function checkBounds(boundsMs: readonly number[]): number[] {
  boundsMs.forEach((b, i) => {
    if (!Number.isSafeInteger(b) || b < 0 || (i > 0 && b <= boundsMs[i - 1]!)) {
      throw new RangeError(`histogram bounds must be ascending whole milliseconds; got ${JSON.stringify(boundsMs)}`);
    }
  });
  return [...boundsMs];
}

function emptyAttemptStats(boundsMs: readonly number[]): AttemptStats {
  const outcomes = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  return { outcomes, boundsMs: [...boundsMs], buckets: boundsMs.map(() => 0), count: 0, sumMs: 0 };
}

export function foldAttemptStats(rows: AttemptStatsRow[], boundsMs: readonly number[]): AttemptStats {
  const stats = emptyAttemptStats(boundsMs);
  const per = new Array<number>(boundsMs.length + 1).fill(0);
  for (const r of rows) {
    const n = Number(r.n);
    stats.outcomes[r.outcome] += n;
    if (r.bucket === null) continue;
    per[Number(r.bucket)]! += n;
    stats.count += n;
    stats.sumMs += Number(r.sum_ms ?? 0);
  }
  let below = 0;
  stats.buckets = boundsMs.map((_, i) => (below += per[i]!));
  return stats;
}

/** Adds one ended attempt to `stats` (a run keeps its own counters this way; see run/run-metrics.ts). */
export function addAttempt(stats: AttemptStats, outcome: Outcome, durationMs: number | null): void {
  stats.outcomes[outcome]++;
  if (durationMs === null) return;
  stats.count++;
  stats.sumMs += durationMs;
  stats.boundsMs.forEach((b, i) => {
    if (durationMs <= b) stats.buckets[i]!++;
  });
}
