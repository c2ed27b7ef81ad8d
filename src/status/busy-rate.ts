import type { LearnedWork } from '../store/task-store.js';

/**
 * A rate over time spent running (SPEC §6), not since the batch was created. A run (or a
 * `worker`) is running the batch from its first attempt to its last, waits for retries
 * included: 5 tasks that took 21 s because two of them waited 5 s and 15 s for a retry ran
 * at 5 / 21 s, not at 5 over the milliseconds their commands took. The hours a batch sat idle
 * — between nightly runs, paused, or waiting for `retry-failed` — do not dilute it: a gap in
 * one run's attempts longer than any retry waits (the batch's `--max-backoff`) is not running
 * time, and neither is the time between two runs. Measured on the most recent attempts only,
 * so `status` stays cheap on a million tasks.
 */
export const RATE_WINDOW = 500;

export interface Interval {
  startedAt: number;
  endedAt: number | null;
  /** Who ran it (a lease owner: one `run` or `worker` process); intervals without one stand alone. */
  owner?: string;
}

/**
 * Milliseconds of running time: per owner, its ended intervals joined across gaps of at most
 * `maxGapMs` (a retry waited on), then the union over owners. Unended intervals do not count.
 */
export function runningMs(intervals: Interval[], maxGapMs = 0): number {
  const byOwner = new Map<string | Interval, { startedAt: number; endedAt: number }[]>();
  for (const i of intervals) {
    if (i.endedAt === null || i.endedAt < i.startedAt) continue;
    const owner = i.owner ?? i;
    const list = byOwner.get(owner) ?? [];
    list.push({ startedAt: i.startedAt, endedAt: i.endedAt });
    byOwner.set(owner, list);
  }
  const spans: { startedAt: number; endedAt: number }[] = [];
  for (const list of byOwner.values()) spans.push(...merge(list, maxGapMs));
  return merge(spans, 0).reduce((sum, s) => sum + (s.endedAt - s.startedAt), 0);
}

/** The spans covered by `list`, joining two when the gap between them is at most `maxGapMs`. */
function merge(list: { startedAt: number; endedAt: number }[], maxGapMs: number): { startedAt: number; endedAt: number }[] {
  const out: { startedAt: number; endedAt: number }[] = [];
  for (const i of [...list].sort((a, b) => a.startedAt - b.startedAt)) {
    const last = out[out.length - 1];
    if (last && i.startedAt - last.endedAt <= maxGapMs) last.endedAt = Math.max(last.endedAt, i.endedAt);
    else out.push({ ...i });
  }
  return out;
}

/**
 * Tasks finished per second of running time: the recent attempts over their running time
 * (`runningMs`), scaled by how many attempts a finished task has taken so far (retries make a
 * task cost more). Null until some attempt has ended.
 */
export function tasksPerSecond(recent: Interval[], finishedTasks: number, endedAttempts: number, maxGapMs = 0): number | null {
  const ended = recent.filter((i) => i.endedAt !== null).length;
  const running = runningMs(recent, maxGapMs);
  if (ended === 0 || running <= 0 || finishedTasks === 0 || endedAttempts === 0) return null;
  return (ended / (running / 1000)) * Math.min(1, finishedTasks / endedAttempts);
}

/** The retries still ahead, as an ETA must see them. */
export interface RetriesAhead {
  /** Tasks waiting for a retry. */
  retrying: number;
  /** Milliseconds until the first of them is due (0 when one is due already). */
  firstDueInMs: number;
  /** Milliseconds until the last of them is due. */
  lastDueInMs: number;
}

/**
 * The open tasks counted in finished tasks' worth of work, for a rate in tasks per second:
 * with learned durations (--order history), each open task that has one weighs its duration
 * against the mean of the succeeded ones that have one (the slow keys run first, so the
 * rate of the first tasks is not the rate of the rest). Without them, `open` as it is.
 */
export function weightedOpen(open: number, work?: LearnedWork): number {
  if (!work || work.openKnown === 0 || work.doneKnown === 0 || work.doneMs <= 0) return open;
  const scale = work.openMs / work.openKnown / (work.doneMs / work.doneKnown);
  return Math.max(0, open - work.openKnown) + work.openKnown * scale;
}

/**
 * Seconds until the open tasks are done at `rate`: never 0 while any is open (0 means done).
 * Backoff still ahead is waited, not worked through: the ETA is at least the wait for the
 * first due retry plus the retrying tasks' work, and the wait for the last plus one task's,
 * whatever the rate. `work`: the learned durations, when the batch has them (weightedOpen).
 */
export function etaSeconds(open: number, rate: number | null, ahead?: RetriesAhead, work?: LearnedWork): number | null {
  if (open === 0) return 0;
  if (!rate) return null;
  let seconds = weightedOpen(open, work) / rate;
  if (ahead && ahead.retrying > 0) {
    seconds = Math.max(seconds, Math.max(0, ahead.firstDueInMs) / 1000 + ahead.retrying / rate, Math.max(0, ahead.lastDueInMs) / 1000 + 1 / rate);
  }
  return Math.max(1, Math.ceil(seconds));
}
