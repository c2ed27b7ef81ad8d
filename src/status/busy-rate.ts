/**
 * A rate over time spent running (SPEC §6), not since the batch was created: the union of the
 * recent attempts' [start, end] intervals is the time something ran, so the hours a batch sat
 * idle — between nightly windows, paused, or waiting for `retry-failed` — do not dilute it.
 * Measured on the most recent attempts only, so `status` stays cheap on a million tasks.
 */
export const RATE_WINDOW = 500;

export interface Interval {
  startedAt: number;
  endedAt: number | null;
}

/** Milliseconds covered by at least one of the ended intervals. */
export function busyMs(intervals: Interval[]): number {
  const ended = intervals
    .filter((i): i is { startedAt: number; endedAt: number } => i.endedAt !== null && i.endedAt >= i.startedAt)
    .sort((a, b) => a.startedAt - b.startedAt);
  let total = 0;
  let from = -Infinity;
  let to = -Infinity;
  for (const i of ended) {
    if (i.startedAt > to) {
      if (to > from) total += to - from;
      from = i.startedAt;
      to = i.endedAt;
    } else if (i.endedAt > to) {
      to = i.endedAt;
    }
  }
  if (to > from) total += to - from;
  return total;
}

/**
 * Tasks finished per second of running time: the recent attempts' rate over their busy time,
 * scaled by how many attempts a finished task has taken so far (retries make a task cost more).
 * Null until some attempt has ended.
 */
export function tasksPerSecond(recent: Interval[], finishedTasks: number, endedAttempts: number): number | null {
  const ended = recent.filter((i) => i.endedAt !== null).length;
  const busy = busyMs(recent);
  if (ended === 0 || busy <= 0 || finishedTasks === 0 || endedAttempts === 0) return null;
  return (ended / (busy / 1000)) * Math.min(1, finishedTasks / endedAttempts);
}

/** Seconds until the open tasks are done at `rate`: never 0 while any is open (0 means done). */
export function etaSeconds(open: number, rate: number | null): number | null {
  if (open === 0) return 0;
  return rate ? Math.max(1, Math.ceil(open / rate)) : null;
}
