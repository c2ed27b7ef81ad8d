/** The messages between the pool and a worker: what the pool sends, and what a worker's attempt messages change and report. */
import { monotonicMs } from '../wall-steps.js';
import type { DoneMessage, FromWorker, ToWorker } from '../worker/protocol.js';
import type { PoolEvents, PoolWorker } from './pool-events.js';
import * as slots from './slots.js';
import type { WorkerProcess } from './worker-process.js';

/** A worker as the pool holds it: its place in the schedule (slots.ts) and its process. */
export interface Slot extends PoolWorker, slots.SlotState {
  /** `{%}`: 1…`-j`, the lowest no other live worker of the pool holds (a replacement takes the dead one's). */
  readonly number: number;
  queue: number[];
  proc: WorkerProcess;
  /** The tail of its stderr, for the message when it dies. */
  stderr: string;
  /** Its started exec attempts' process groups, by token, until each is done. */
  groups: Map<number, number>;
  /** Its exec attempts' environment marks (attempt-processes.ts), by token, until each is done or given back. */
  marks: Map<number, string[]>;
}

/** The messages a worker sends about its attempts, once its handler is ready. */
export type AttemptMessage = Exclude<FromWorker, { type: 'booted' | 'ready' | 'load-failed' }>;

/** When a worker is recycled (--max-tasks-per-worker, --max-worker-memory; null: never). */
export interface RecycleLimits {
  maxTasksPerWorker: number | null;
  maxWorkerMemory: number | null;
}

/** Sends while the worker's channel is open; a closed one will report its end through 'exit'. */
export function send(slot: Slot, msg: ToWorker): void {
  if (slot.proc.connected) slot.proc.send(msg);
}

/**
 * What an attempt message changes on the worker's slot, then tells the coordinator. No worker
 * starts recycling once the pool is `closing`.
 */
export function route(slot: Slot, msg: AttemptMessage, events: PoolEvents, limits: RecycleLimits, closing: boolean): void {
  if (msg.type === 'spawned') {
    if (!slot.queue.includes(msg.token)) return;
    slot.groups.set(msg.token, msg.pgid);
    events.started(slot, msg.token);
  } else if (msg.type === 'heartbeat') {
    events.heartbeat(msg.token);
  } else if (msg.type === 'ran') {
    events.ran(msg.token);
  } else if (msg.type === 'done') {
    finishAttempt(slot, msg.result, msg.rss, events, limits, closing);
  } else if (msg.type === 'dropped') {
    const dropped = slots.takeBack(slot, msg.tokens);
    for (const t of dropped) slot.marks.delete(t);
    const why = slot.retiring ? 'its worker was being recycled (--max-worker-memory)' : 'taken back unstarted from a worker busy with a slow attempt';
    events.dropped(slot, dropped, why);
    retireIfIdle(slot);
  }
}

function finishAttempt(slot: Slot, msg: DoneMessage, rss: number, events: PoolEvents, limits: RecycleLimits, closing: boolean): void {
  if (!slots.endHead(slot, msg.token, msg.durationMs, monotonicMs())) return;
  slot.groups.delete(msg.token);
  slot.marks.delete(msg.token);
  const { maxTasksPerWorker, maxWorkerMemory } = limits;
  const tooBig = maxWorkerMemory !== null && rss > maxWorkerMemory;
  const worn = (maxTasksPerWorker && slot.tasksRun >= maxTasksPerWorker) || tooBig;
  if (worn && !closing && !slot.retiring) {
    slot.retiring = true; // no new attempts; it exits once its queue is empty
    if (tooBig && slot.queue.length > 1) send(slot, { type: 'drop' }); // and runs none of the queued ones
  }
  events.done(slot, msg);
  retireIfIdle(slot);
}

/** A recycled worker that holds nothing more closes its channel: it exits by itself, and 'exit' spawns the replacement. */
function retireIfIdle(slot: Slot): void {
  if (slot.retiring && slot.queue.length === 0 && slot.proc.connected) slot.proc.disconnect();
}
