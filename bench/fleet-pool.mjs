// The worker side of a simulated host: slots that run every attempt in-process, doing nothing
// (or sleeping), so a host costs almost no client CPU and the store's verbs are what is
// measured. It offers the coordinator what src/pool/pool.ts's WorkerPool does (the
// coordinator is the real one); the forked workers and their IPC are left out on purpose.

/**
 * How many attempts a slot holds by default: the running one and the next, as the real pool's
 * window does for tasks of 4 ms or more (src/pool/slot-window.ts). For shorter tasks the real
 * window grows to about 4 ms of work, up to 64: FLEET_WINDOW sets it.
 */
const WINDOW = 2;

export class SimPool {
  constructor(slots, sleepMs, id, window = WINDOW, group = 1) {
    this.sleepMs = sleepMs;
    /** Items per attempt (FLEET_GROUP): a group's one claim, one run and one settle, as `-n N` makes them. */
    this.group = group;
    this.window = window;
    /** Items run, a group's all counted. */
    this.ran = 0;
    /** Items of each run queued or running, by its token (its first item's). */
    this.items = new Map();
    this.closing = false;
    this.events = null;
    this.workers = Array.from({ length: slots }, (_, i) => ({ id: `${id}.w${i + 1}`, pid: null, queue: [], tasksRun: 0, ready: true, retiring: false }));
  }

  attach(events) {
    this.events = events;
  }
  quiesce() {
    this.closing = true;
  }
  async grow() {}
  freePlaces() {
    const free = [];
    for (let round = 0; round < this.window; round++) for (const w of this.workers) if (w.queue.length <= round) free.push(w);
    return free;
  }
  reportsStarts() {
    return false;
  }
  /** What the coordinator asks of groups (src/pool/group-bounds.ts). */
  get groups() {
    const group = this.group;
    return { maxItems: () => group, splits: () => true, claimShape: () => ({ perPlace: group, dealt: true }) };
  }
  needsWork() {
    return this.workers.some((w) => w.queue.length < 2);
  }
  hasIdleWorker() {
    return this.workers.some((w) => w.queue.length === 0);
  }
  stuck() {
    return [];
  }
  /** In-process slots are never stopped by a signal. */
  stopped() {
    return [];
  }
  /** Never empty: these slots need no process. */
  whyEmpty() {
    return null;
  }
  drop(w) {
    const queued = w.queue.splice(1);
    for (const token of queued) this.items.delete(token);
    if (queued.length) setImmediate(() => this.events.dropped(w, queued, 'taken back unstarted'));
  }
  dropQueued() {
    for (const w of this.workers) if (w.queue.length > 1) this.drop(w);
  }
  dispatch(w, tasks) {
    const idle = w.queue.length === 0;
    for (const t of tasks) this.items.set(t.token, 1 + (t.more?.length ?? 0));
    w.queue.push(...tasks.map((t) => t.token));
    if (idle) this.startHead(w);
  }
  abort() {}
  interrupt(w) {
    this.drop(w);
  }
  kill() {}
  async shutdown() {}
  get size() {
    return this.workers.length;
  }

  /** Runs the slot's head attempt (one item's, or a group's): it ends after `sleepMs` (next loop turn for 0), reported as a success; for a group, the coordinator settles every item of it by that one report. */
  startHead(w) {
    const token = w.queue[0];
    if (token === undefined) return;
    const startedAt = Date.now();
    const end = () => {
      if (w.queue[0] !== token) return;
      w.queue.shift();
      w.tasksRun++;
      this.ran += this.items.get(token) ?? 1;
      this.items.delete(token);
      const durationMs = Date.now() - startedAt;
      this.events.done(w, { token, ok: true, result: 'null', error: null, exitCode: 0, signal: null, outputTail: null, logPath: null, durationMs, startedAt });
      this.startHead(w);
    };
    if (this.sleepMs > 0) setTimeout(end, this.sleepMs);
    else setImmediate(end);
  }
}
