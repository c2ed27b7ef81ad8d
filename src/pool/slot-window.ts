/**
 * How many attempts a slot holds (SPEC §5, queued attempts). Every slot holds its next
 * attempt before the current one ends, so none waits for a round trip to the coordinator: one
 * queued attempt at least, and as many as make about QUEUED_WORK_MS of work by its recent
 * attempt durations, never more than MAX_WINDOW in all. A crash of the coordinator then
 * charges each slot few tasks: one queued attempt for slow handlers, a few milliseconds of
 * work for fast ones.
 */
const QUEUED_WORK_MS = 4;
const MAX_WINDOW = 64;
/** An attempt running this many times longer than its slot's average is slow: nothing more is queued behind it. */
const SLOW = 3;
/** Weight of the newest duration in a slot's running average. */
const EWMA = 0.2;

export interface SlotTiming {
  /** Running average of its attempts' durations (ms), null before the first. */
  avgMs: number | null;
  /** When its current attempt started (the head of its queue). */
  /** When its running attempt began, on the monotonic clock (wall-steps.ts). */
  headSince: number;
}

/**
 * The attempts the slot may hold, its running one included, `held` now and `room` left
 * before it is recycled (--max-tasks-per-worker; null: no limit).
 */
export function slotWindow(slot: SlotTiming, held: number, room: number | null, now: number): number {
  const limit = room === null ? MAX_WINDOW : Math.max(1, room);
  if (slot.avgMs === null) return Math.min(2, limit); // no duration known yet: one next attempt
  // Running far longer than usual says this one is slow: queue nothing more behind it.
  const running = held ? now - slot.headSince : 0;
  if (running > SLOW * slot.avgMs + QUEUED_WORK_MS) return 1;
  const queued = Math.max(1, Math.floor(QUEUED_WORK_MS / Math.max(slot.avgMs, QUEUED_WORK_MS / MAX_WINDOW)));
  return Math.max(1, Math.min(1 + queued, MAX_WINDOW, limit));
}

/**
 * How many more places of `perPlace` tasks each (a group's, SPEC §10) a slot holding `held`
 * tasks may take: up to MAX_WINDOW tasks in all, or two places of bigger groups (the running
 * one and the next). Counted in places alone, 64 fast groups of 64 held 4,096 tasks a slot:
 * a coordinator's crash charged them all (LOST), and a tick claimed thousands at once (a
 * statement holding its locks past the lock timeout on PostgreSQL). Without groups this is
 * never less than slotWindow.
 */
export function placesLeft(held: number, perPlace: number): number {
  const items = Math.max(1, perPlace);
  return Math.max(0, Math.floor((Math.max(MAX_WINDOW, 2 * items) - held) / items));
}

/** Whether the slot's running attempt has run longer than `ms`, and than is usual for it. */
export function runningLong(slot: SlotTiming, ms: number, now: number): boolean {
  return now - slot.headSince > Math.max(ms, SLOW * (slot.avgMs ?? 0));
}

/** The slot's average after an attempt of `durationMs`. */
export function averaged(slot: SlotTiming, durationMs: number): number {
  return slot.avgMs === null ? durationMs : slot.avgMs + EWMA * (durationMs - slot.avgMs);
}
