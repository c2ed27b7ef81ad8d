/** The messages between the pool and a worker: what the pool sends, and what a worker's attempt messages change and report. */
import { monotonicMs } from '../wall-steps.js';
import type { DoneMessage, FromWorker, ToWorker } from '../worker/protocol.js';
import type { PoolEvents, PoolWorker } from './pool-events.js';
import * as slots from './slots.js';
import type { WorkerProcess } from './worker-process.js';

/** A worker as the pool holds it: its place in the schedule (slots.ts) and its process. */
export interface PooledWorker extends PoolWorker, slots.WorkerState {
  /** Its slot, `{%}`: 1…`-j`, the lowest no other live worker of the pool holds (a replacement takes the dead one's). */
  readonly slot: number;
  queue: number[];
  proc: WorkerProcess;
  /** The tail of its stderr, for the message when it dies. */
  stderr: string;
  /** Its started exec attempts' process groups, by token, until each is done. */
  groups: Map<number, number>;
  /** Its exec attempts' environment marks (attempt-processes.ts), made when needed, by token, until each is done or given back. */
  marks: Map<number, () => string[]>;
}

/** A worker just started, its handler not loaded yet: it holds `slot` ({%}) until it has exited. */
export function pooledWorker(id: string, slot: number, proc: WorkerProcess): PooledWorker {
  return { id, slot, pid: proc.pid ?? null, queue: [], avgMs: null, headSince: 0, groups: new Map(), marks: new Map(), stoppedSince: null, tasksRun: 0, ready: false, retiring: false, proc, stderr: '' };
}

/** The messages a worker sends about its attempts, once its handler is ready. */
export type AttemptMessage = Exclude<FromWorker, { type: 'booted' | 'ready' | 'load-failed' }>;

/** When a worker is recycled (--max-tasks-per-worker, --max-worker-memory; null: never). */
export interface RecycleLimits {
  maxTasksPerWorker: number | null;
  maxWorkerMemory: number | null;
}

/** Sends while the worker's channel is open; a closed one will report its end through 'exit'. Undefined: a handle of no worker of this pool. */
export function send(worker: PooledWorker | undefined, msg: ToWorker): void {
  if (worker?.proc.connected) worker.proc.send(msg);
}

/**
 * What an attempt message changes on the worker, then tells the coordinator. No worker
 * starts recycling once the pool is `closing`.
 */
export function route(worker: PooledWorker, msg: AttemptMessage, events: PoolEvents, limits: RecycleLimits, closing: boolean): void {
  if (msg.type === 'spawned') {
    if (!worker.queue.includes(msg.token)) return;
    worker.groups.set(msg.token, msg.pgid);
    events.started(worker, msg.token);
  } else if (msg.type === 'heartbeat') {
    events.heartbeat(msg.token);
  } else if (msg.type === 'ran') {
    events.ran(msg.token);
  } else if (msg.type === 'done') {
    finishAttempt(worker, msg.result, msg.rss, events, limits, closing);
  } else if (msg.type === 'dropped') {
    const dropped = slots.takeBack(worker, msg.tokens);
    for (const t of dropped) worker.marks.delete(t);
    const why = worker.retiring ? 'its worker was being recycled (--max-worker-memory)' : 'taken back unstarted from a worker busy with a slow attempt';
    events.dropped(worker, dropped, why);
    retireIfIdle(worker);
  }
}

function finishAttempt(worker: PooledWorker, msg: DoneMessage, rss: number, events: PoolEvents, limits: RecycleLimits, closing: boolean): void {
  if (!slots.endHead(worker, msg.token, msg.durationMs, monotonicMs())) return;
  worker.groups.delete(msg.token);
  worker.marks.delete(msg.token);
  const { maxTasksPerWorker, maxWorkerMemory } = limits;
  const tooBig = maxWorkerMemory !== null && rss > maxWorkerMemory;
  const worn = (maxTasksPerWorker && worker.tasksRun >= maxTasksPerWorker) || tooBig;
  if (worn && !closing && !worker.retiring) {
    worker.retiring = true; // no new attempts; it exits once its queue is empty
    if (tooBig && worker.queue.length > 1) send(worker, { type: 'drop' }); // and runs none of the queued ones
  }
  events.done(worker, msg);
  retireIfIdle(worker);
}

/** A recycled worker that holds nothing more closes its channel: it exits by itself, and 'exit' spawns the replacement. */
function retireIfIdle(worker: PooledWorker): void {
  if (worker.retiring && worker.queue.length === 0 && worker.proc.connected) worker.proc.disconnect();
}
