/** `splitdance wait`: a batch followed until it is done, from any host, reading the store only. */
import { Outage } from '../coordinator/outage.js';
import type { ShutdownSignal } from '../coordinator/run-types.js';
import { StoreError } from '../errors.js';
import { printable } from '../printable.js';
import type { BatchRecord, QueryStore } from '../store/task-store.js';
import { monotonicMs } from '../wall-steps.js';
import { pause, signalOf } from './signals.js';

/** How a wait ended: the batch done, the --timeout reached first, or a signal. */
export type WaitEnd = { kind: 'done' } | { kind: 'timeout' } | { kind: 'signal'; signal: ShutdownSignal };

export interface Waiting {
  /** How often to look again. */
  intervalMs: number;
  /** When to give up, on the monotonic clock (a wall-clock step neither ends nor stretches it); null: never. */
  deadline: number | null;
  signal: AbortSignal;
  /** A line about a store outage being waited out. */
  note(m: string): void;
  /** Said once when the batch is seen paused (it is not done, and nothing runs it until resumed). */
  paused(): void;
}

/**
 * Looks at the batch every `intervalMs` until nothing is left to run (every task terminal,
 * every committed success's declared output in place): a few index lookups a look, whoever
 * runs it (a `run`, `worker`s on other hosts). A store that goes down meanwhile is waited out
 * as a run waits it out (its limit, then exit 4), within the --timeout and until a signal.
 */
export async function waitUntilDone(store: Pick<QueryStore, 'progress' | 'pendingOutputs' | 'findBatch'>, batch: BatchRecord, w: Waiting): Promise<WaitEnd> {
  const outage = new Outage((m) => w.note(m.replace('running attempts go on, ', '')));
  let saidPaused = false;
  for (;;) {
    let wait = w.intervalMs;
    try {
      const current = await store.findBatch(batch.name);
      // Pruned while waited for: its (empty) counts would read as a success.
      if (current?.id !== batch.id) throw new StoreError(`batch "${printable(batch.name)}" is no longer in the store (pruned?); nothing to wait for`);
      const { unfinished } = await store.progress(batch.id);
      if (!unfinished && (await store.pendingOutputs(batch.id)).length === 0) return { kind: 'done' };
      outage.recovered();
      if (current.paused && !saidPaused) w.paused();
      saidPaused ||= current.paused;
    } catch (err) {
      wait = Math.min(wait, outage.failed(err)); // throws what is not an outage, and one past its limit
    }
    const left = w.deadline === null ? Number.POSITIVE_INFINITY : w.deadline - monotonicMs();
    if (left <= 0) return { kind: 'timeout' };
    if (await pause(Math.min(wait, left), w.signal)) return { kind: 'signal', signal: signalOf(w.signal) ?? 'SIGINT' };
  }
}
