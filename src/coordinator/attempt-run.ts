/**
 * One command (or handler call) in flight for one task or a group of them (SPEC §10): its
 * state, its message to the worker, and how each item's outcome is read from its end.
 */
import { attemptLogFile } from '../store/log-layout.js';
import type { ClaimedTask } from '../store/task-store.js';
import type { DoneMessage, GroupItem, TaskMessage } from '../worker/protocol.js';
import type { PoolWorker } from '../pool/pool.js';
import type { OutputPaths } from '../output/output-path.js';
import type { SilenceWatch } from './silence-watch.js';
import type { TimedOut } from './settlement.js';

/** One claimed task, in flight until its attempt is settled. */
export interface Inflight {
  task: ClaimedTask;
  worker: PoolWorker;
  /** The command (or handler call) it runs in: its own, or its group's. */
  run: Run;
  /** Claimed as queued: the store shows its task queued until told it started. */
  claimedQueued: boolean;
  /** Its declared output's paths (null without one; a group has none). */
  output: OutputPaths | null;
}

/**
 * One command (or handler call) for one task or a group of them (SPEC §10): what the pool and
 * the worker know by its first item's token. A failed group is split: its halves are new runs
 * of the same attempts, on the same worker.
 */
export interface Run {
  head: number;
  members: Inflight[];
  worker: PoolWorker;
  /** Its group's how-manieth run (its log is `<head>-<part>.log`): 1 the first, then the halves of a failed group; 0 for one task alone. */
  part: number;
  /** Parts handed out in its family so far, shared by every half split from one claim's group. */
  family: { parts: number };
  /** Whether it has started (the others wait in their worker's queue, or its launcher's). */
  started: boolean;
  /** When it started running; until then, when it was claimed. */
  startedAt: number;
  /** It waited queued behind another attempt on its worker before it started. */
  waited: boolean;
  /** Stopped by the coordinator: by --timeout, or by --heartbeat-timeout. */
  timedOut: TimedOut;
  /** --heartbeat-timeout's watch, once it started (also in `timers`). */
  silence?: SilenceWatch;
  /** Stopped by a shutdown: however it ends, it is INTERRUPTED (not charged). */
  interrupted: boolean;
  timers: { cancel(): void }[];
}

/** What a run's message needs to know of its batch: its name, its log folder, where --print copies go. */
interface RunPlaces {
  batchName: string;
  logFolder: string;
  printPrefix: ((id: string) => string) | null;
}

/** The run's message to its worker: its first item's, carrying the others (`more`). */
export function runMessage(run: Run, places: RunPlaces): TaskMessage {
  const item = (task: ClaimedTask): GroupItem => ({ token: task.token, key: task.key, batch: places.batchName, stage: task.stage, seq: task.seq, attempt: task.attempt, payload: task.payload, inputs: task.inputs });
  const head = run.members[0]!;
  const more = run.members.slice(1).map((m) => item(m.task));
  return {
    ...item(head.task),
    logFile: attemptLogFile(places.logFolder, run.head, run.part),
    output: head.output,
    print: places.printPrefix?.(printId(run)) ?? null,
    ...(more.length ? { more } : {}),
  };
}

/** A run's name for its --print copies: its first item's token, and its part after a split. */
export function printId(run: Run): string {
  return run.part ? `${run.head}-${run.part}` : String(run.head);
}

/** One item's done message out of a `batch` call's: its own outcome, the call's output and clock. */
export function itemMessage(msg: DoneMessage, token: number, item: NonNullable<DoneMessage['items']>[number] | undefined): DoneMessage {
  const outcome = item ?? { ok: false, result: null, error: { name: 'Error', message: 'the batch call gave no outcome for this item', retryable: true } };
  return { ...msg, token, ok: outcome.ok, result: outcome.result, error: outcome.error, items: undefined };
}
