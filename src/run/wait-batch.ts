/** `splitdance wait`: a batch followed until it is done, from any host, reading the store only. */
import { ridingOut } from '../coordinator/outage.js';
import type { ShutdownSignal } from '../coordinator/run-types.js';
import { StoreError } from '../errors.js';
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
}

/**
 * Looks at the batch every `intervalMs` until nothing is left to run (every task terminal,
 * every committed success's declared output in place): two index lookups a look, whoever runs
 * it (a `run`, `worker`s on other hosts). A store that goes down meanwhile is waited out as a
 * run waits it out. A paused batch is not done: the wait goes on until its --timeout.
 */
export async function waitUntilDone(store: Pick<QueryStore, 'progress' | 'pendingOutputs' | 'findBatch'>, batch: BatchRecord, w: Waiting): Promise<WaitEnd> {
  for (;;) {
    const { unfinished } = await ridingOut(() => store.progress(batch.id), w.note);
    if (!unfinished && (await ridingOut(() => store.pendingOutputs(batch.id), w.note)).length === 0) {
      // Pruned while waited for: its (empty) counts would read as a success.
      if ((await ridingOut(() => store.findBatch(batch.name), w.note))?.id !== batch.id) {
        throw new StoreError(`batch "${batch.name}" is no longer in the store (pruned?); nothing to wait for`);
      }
      return { kind: 'done' };
    }
    const left = w.deadline === null ? Number.POSITIVE_INFINITY : w.deadline - monotonicMs();
    if (left <= 0) return { kind: 'timeout' };
    if (await pause(Math.min(w.intervalMs, left), w.signal)) return { kind: 'signal', signal: signalOf(w.signal) ?? 'SIGINT' };
  }
}
