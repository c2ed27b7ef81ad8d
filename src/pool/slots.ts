/** Scheduling a pool's workers: which take attempts now (their free places), what each holds, and which are stuck or stopped. */
import { averaged, placesLeft, runningLong, slotWindow, type SlotTiming } from './slot-window.js';

/**
 * What the schedule knows of a worker: plain data, kept by the pool and decided on here. Times
 * are on the monotonic clock (wall-steps.ts), except `stoppedSince`, on the caller's clock.
 */
export interface WorkerState extends SlotTiming {
  readonly pid: number | null;
  /**
   * The attempts handed to it and not yet ended, in order: the first runs, the rest wait (an
   * exec attempt may start before the one ahead of it is reported).
   */
  queue: number[];
  /** How many tasks the queue's attempts of more than one task (groups) hold, by token. */
  sizes?: Map<number, number>;
  tasksRun: number;
  /** Its handler has loaded. */
  ready: boolean;
  /** It exits once idle (recycling): nothing more is handed to it. */
  retiring: boolean;
  /** Since when its process has been seen stopped (SIGSTOP) while holding attempts; null if it was not. */
  stoppedSince: number | null;
}

/**
 * The slot a new worker takes (`{%}`, GNU parallel's job slot): the lowest that no live
 * worker holds. A worker runs one attempt at a time and keeps its slot until it has
 * exited (a recycled one too), so no two attempts running at once share one, and with at
 * most `-j` workers every slot is in 1…`-j`.
 */
export function freeSlot(workers: Iterable<{ readonly slot: number }>): number {
  const held = new Set([...workers].map((w) => w.slot));
  let n = 1;
  while (held.has(n)) n++;
  return n;
}

/** Whether the worker is handed attempts: its handler has loaded and it is not being recycled. */
const open = (worker: WorkerState): boolean => worker.ready && !worker.retiring;

/** How many attempts the worker may hold now, its running one included (--max-tasks-per-worker: null or 0, no limit). */
export function windowOf(worker: WorkerState, maxTasksPerWorker: number | null, now: number): number {
  return slotWindow(worker, worker.queue.length, maxTasksPerWorker ? maxTasksPerWorker - worker.tasksRun : null, now);
}

/** How many tasks the worker holds: its attempts', a group's all counted. */
function heldTasks(worker: WorkerState): number {
  let held = 0;
  for (const token of worker.queue) held += worker.sizes?.get(token) ?? 1;
  return held;
}

/**
 * One entry per attempt the workers can take now: a worker appears once per free place in its
 * window, or in the first `cap` places of it, each place claiming `perPlace` tasks (placesLeft).
 */
export function freePlaces<S extends WorkerState>(workers: Iterable<S>, maxTasksPerWorker: number | null, now: number, cap: number | null = null, perPlace = 1): S[] {
  // By how soon the place runs: every idle worker's first (it runs at once), then every place
  // one attempt back in its queue, … So a claim that comes up short still spreads its tasks over
  // the workers, and never queues one behind a running attempt while a worker sits idle (as one
  // that has just loaded does).
  const window = (worker: S) =>
    Math.min(windowOf(worker, maxTasksPerWorker, now), cap ?? Infinity, worker.queue.length + placesLeft(heldTasks(worker), perPlace));
  const room = [...workers].filter(open).map((worker) => ({ worker, from: worker.queue.length, to: window(worker) }));
  const free: S[] = [];
  for (let place = 0; room.some((r) => r.to > place); place++) for (const r of room) if (r.from <= place && place < r.to) free.push(r.worker);
  return free;
}

/** Whether some worker holds no next attempt (a queue of at most the running one). */
export function needsWork(workers: Iterable<WorkerState>): boolean {
  for (const worker of workers) if (open(worker) && worker.queue.length < 2) return true;
  return false;
}

/** Whether some worker has nothing to do. */
export function hasIdleWorker(workers: Iterable<WorkerState>): boolean {
  return [...workers].some((worker) => open(worker) && worker.queue.length === 0);
}

/**
 * Slots whose running attempt has run for longer than `ms` (and than is usual for it) while
 * others wait queued behind it, and another worker is idle: those can be taken back and run there.
 */
export function stuck<S extends WorkerState>(workers: Iterable<S>, ms: number, now: number): S[] {
  if (!hasIdleWorker(workers)) return [];
  return [...workers].filter((worker) => worker.queue.length > 1 && runningLong(worker, ms, now));
}

/**
 * Slots whose process has been stopped (SIGSTOP) for `ms` or more while holding attempts, as
 * `isStopped(pid)` sees it now; remembers on each worker since when it has been (`stoppedSince`).
 * A worker that holds nothing, or has no process, is not looked at. Such a worker answers nothing:
 * not the `drop` that would free its queued attempts, and not the end of its running one, whose
 * lease the run renews — the run would wait for it for ever. Nor can its queued attempts be
 * handed elsewhere while it lives: woken, it would start them.
 */
export function stopped<S extends WorkerState>(workers: Iterable<S>, ms: number, now: number, isStopped: (pid: number) => boolean): S[] {
  const found: S[] = [];
  for (const worker of workers) {
    const stoppedNow = worker.queue.length > 0 && worker.pid !== null && isStopped(worker.pid);
    worker.stoppedSince = stoppedNow ? (worker.stoppedSince ?? now) : null;
    if (worker.stoppedSince !== null && now - worker.stoppedSince >= ms) found.push(worker);
  }
  return found;
}

/**
 * Queues attempts on the worker, after those it holds; the first of an empty worker starts
 * `now`. `sizes`: how many tasks each holds (a group's), 1 when absent.
 */
export function queueAttempts(worker: WorkerState, tokens: number[], now: number, sizes: number[] = []): void {
  if (worker.queue.length === 0) worker.headSince = now;
  worker.queue.push(...tokens);
  tokens.forEach((token, i) => {
    if ((sizes[i] ?? 1) > 1) (worker.sizes ??= new Map()).set(token, sizes[i]!);
  });
}

/**
 * The worker's running attempt ended after `durationMs`: the next one starts `now`. False, and
 * nothing changes, when `token` is not the running attempt.
 */
export function endHead(worker: WorkerState, token: number, durationMs: number, now: number): boolean {
  if (worker.queue[0] !== token) return false;
  worker.queue.shift();
  worker.sizes?.delete(token);
  worker.headSince = now;
  worker.tasksRun++;
  worker.avgMs = averaged(worker, durationMs);
  return true;
}

/** Takes the given queued attempts off the worker; returns those it held (the others had ended). */
export function takeBack(worker: WorkerState, tokens: number[]): number[] {
  const held = tokens.filter((t) => worker.queue.includes(t));
  worker.queue = worker.queue.filter((t) => !held.includes(t));
  for (const t of held) worker.sizes?.delete(t);
  return held;
}

/**
 * Empties the queue of a worker that died: `running`, the attempts that had started (the
 * head, and every one in `spawned`); `queued`, those that never did.
 */
export function emptyQueue(worker: WorkerState, spawned: { has(token: number): boolean }): { running: number[]; queued: number[] } {
  const started = (t: number, i: number) => i === 0 || spawned.has(t);
  const running = worker.queue.filter(started);
  const queued = worker.queue.filter((t, i) => !started(t, i));
  worker.queue = [];
  worker.sizes?.clear();
  return { running, queued };
}
