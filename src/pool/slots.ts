/** Slot scheduling: which workers take attempts now, what each holds, and which are stuck or stopped. */
import { averaged, runningLong, slotWindow, type SlotTiming } from './slot-window.js';

/**
 * What the schedule knows of a worker: plain data, kept by the pool and decided on here. Times
 * are on the monotonic clock (wall-steps.ts), except `stoppedSince`, on the caller's clock.
 */
export interface SlotState extends SlotTiming {
  readonly pid: number | null;
  /**
   * The attempts handed to it and not yet ended, in order: the first runs, the rest wait (an
   * exec attempt may start before the one ahead of it is reported).
   */
  queue: number[];
  tasksRun: number;
  /** Its handler has loaded. */
  ready: boolean;
  /** It exits once idle (recycling): nothing more is handed to it. */
  retiring: boolean;
  /** Since when its process has been seen stopped (SIGSTOP) while holding attempts; null if it was not. */
  stoppedSince: number | null;
}

/**
 * The number a new worker takes (`{%}`, GNU parallel's job slot): the lowest that no live
 * worker holds. A worker runs one attempt at a time and keeps its number until it has
 * exited (a recycled one too), so no two attempts running at once share one, and with at
 * most `-j` workers every number is in 1…`-j`.
 */
export function freeNumber(slots: Iterable<{ readonly number: number }>): number {
  const held = new Set([...slots].map((s) => s.number));
  let n = 1;
  while (held.has(n)) n++;
  return n;
}

/** Whether the slot is handed attempts: its handler has loaded and it is not being recycled. */
const open = (slot: SlotState): boolean => slot.ready && !slot.retiring;

/** How many attempts the slot may hold now, its running one included (--max-tasks-per-worker: null or 0, no limit). */
export function windowOf(slot: SlotState, maxTasksPerWorker: number | null, now: number): number {
  return slotWindow(slot, slot.queue.length, maxTasksPerWorker ? maxTasksPerWorker - slot.tasksRun : null, now);
}

/** One entry per attempt the slots can take now: a slot appears once per free place in its window. */
export function freeSlots<S extends SlotState>(slots: Iterable<S>, maxTasksPerWorker: number | null, now: number): S[] {
  // Round by round (each slot's first free place, then each one's second, …), so a claim that
  // comes up short still spreads its tasks over the workers.
  const room = [...slots].filter(open).map((slot) => ({ slot, n: windowOf(slot, maxTasksPerWorker, now) - slot.queue.length }));
  const free: S[] = [];
  for (let round = 0; room.some((r) => r.n > round); round++) for (const r of room) if (r.n > round) free.push(r.slot);
  return free;
}

/** Whether some slot holds no next attempt (a queue of at most the running one). */
export function needsWork(slots: Iterable<SlotState>): boolean {
  for (const slot of slots) if (open(slot) && slot.queue.length < 2) return true;
  return false;
}

/** Whether some slot has nothing to do. */
export function hasIdleWorker(slots: Iterable<SlotState>): boolean {
  return [...slots].some((slot) => open(slot) && slot.queue.length === 0);
}

/**
 * Slots whose running attempt has run for longer than `ms` (and than is usual for it) while
 * others wait queued behind it, and another slot is idle: those can be taken back and run there.
 */
export function stuck<S extends SlotState>(slots: Iterable<S>, ms: number, now: number): S[] {
  if (!hasIdleWorker(slots)) return [];
  return [...slots].filter((slot) => slot.queue.length > 1 && runningLong(slot, ms, now));
}

/**
 * Slots whose process has been stopped (SIGSTOP) for `ms` or more while holding attempts, as
 * `isStopped(pid)` sees it now; remembers on each slot since when it has been (`stoppedSince`).
 * A slot that holds nothing, or has no process, is not looked at. Such a worker answers nothing:
 * not the `drop` that would free its queued attempts, and not the end of its running one, whose
 * lease the run renews — the run would wait for it for ever. Nor can its queued attempts be
 * handed elsewhere while it lives: woken, it would start them.
 */
export function stopped<S extends SlotState>(slots: Iterable<S>, ms: number, now: number, isStopped: (pid: number) => boolean): S[] {
  const found: S[] = [];
  for (const slot of slots) {
    const stoppedNow = slot.queue.length > 0 && slot.pid !== null && isStopped(slot.pid);
    slot.stoppedSince = stoppedNow ? (slot.stoppedSince ?? now) : null;
    if (slot.stoppedSince !== null && now - slot.stoppedSince >= ms) found.push(slot);
  }
  return found;
}

/** Queues attempts on the slot, after those it holds; the first of an empty slot starts `now`. */
export function queueAttempts(slot: SlotState, tokens: number[], now: number): void {
  if (slot.queue.length === 0) slot.headSince = now;
  slot.queue.push(...tokens);
}

/**
 * The slot's running attempt ended after `durationMs`: the next one starts `now`. False, and
 * nothing changes, when `token` is not the running attempt.
 */
export function endHead(slot: SlotState, token: number, durationMs: number, now: number): boolean {
  if (slot.queue[0] !== token) return false;
  slot.queue.shift();
  slot.headSince = now;
  slot.tasksRun++;
  slot.avgMs = averaged(slot, durationMs);
  return true;
}

/** Takes the given queued attempts off the slot; returns those it held (the others had ended). */
export function takeBack(slot: SlotState, tokens: number[]): number[] {
  const held = tokens.filter((t) => slot.queue.includes(t));
  slot.queue = slot.queue.filter((t) => !held.includes(t));
  return held;
}

/**
 * Empties the queue of a slot whose worker died: `running`, the attempts that had started (the
 * head, and every one in `spawned`); `queued`, those that never did.
 */
export function emptyQueue(slot: SlotState, spawned: { has(token: number): boolean }): { running: number[]; queued: number[] } {
  const started = (t: number, i: number) => i === 0 || spawned.has(t);
  const running = slot.queue.filter(started);
  const queued = slot.queue.filter((t, i) => !started(t, i));
  slot.queue = [];
  return { running, queued };
}
