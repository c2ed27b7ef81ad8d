/** Whether a run whose attempts have all ended and been committed is over, and how. */
import type { BatchMoves } from '../store/task-store.js';
import type { RunStore, StopReason, TickPool } from './run-types.js';
import type { Upkeep } from './upkeep.js';

/** What the end of a run is judged on. */
export interface EndLook {
  /** Something of the run is in flight, waiting to be committed, or being put in place. */
  busy: boolean;
  /** Why the run stops, if it does (a signal, a limit): it ends once nothing is busy. */
  stopping: StopReason | null;
  store: RunStore;
  batchId: number;
  pool: Pick<TickPool, 'whyEmpty' | 'hasIdleWorker'>;
  upkeep: Pick<Upkeep, 'watching' | 'definitionChanged'>;
  /** `--no-wait`: end as soon as nothing is claimable. */
  noWait: boolean;
  /** A declared output's rename keeps failing (output-placement.ts). */
  outputsStuck: boolean;
}

/**
 * How the run ends, if it does now: once nothing of it is busy, when it stops; when the batch
 * has no work left (`done`); with `--no-wait` and nothing claimable; or when all that is left
 * waits on outputs that cannot be put in place. Throws when the pool has no worker left.
 * Returns how the batch stood when it looked (null: it did not look).
 */
export async function runEnd(look: EndLook): Promise<{ end: StopReason | null; moves: BatchMoves | null }> {
  if (look.busy) return { end: null, moves: null };
  if (look.stopping) return { end: look.stopping, moves: null };
  const { store, batchId, pool, upkeep } = look;
  // Index lookups, not counts: an idle host looks at this every poll, on batches of any size.
  const moves = await store.progress(batchId);
  if (!moves.unfinished) return { end: { kind: 'done' }, moves };
  const empty = pool.whyEmpty();
  if (empty) throw empty;
  // An owner whose lease passed is watched for a lease before its tasks are taken (renewal-watch.ts): a --no-wait run stays for that.
  if (look.noWait && pool.hasIdleWorker() && !upkeep.watching) {
    // Nothing claimable may only mean claims stopped for a newer definition (before a poll saw it).
    return { end: (await upkeep.definitionChanged()) ? { kind: 'definition-changed' } : { kind: 'no-wait' }, moves };
  }
  if (look.outputsStuck && (await waitsOnOutputsOnly(store, batchId))) return { end: { kind: 'outputs-pending' }, moves };
  return { end: null, moves };
}

/**
 * A rename failed (EXDEV, EROFS: it fails again every poll): whether all that is left waits
 * on it — nothing due, nothing running on any host — so the run ends (exit 3) rather than
 * wait for a disk that may never change. A rare path: only then are the batch's tasks counted.
 */
async function waitsOnOutputsOnly(store: RunStore, batchId: number): Promise<boolean> {
  if ((await store.nextDueAt(batchId)) !== null) return false;
  const c = await store.counts(batchId);
  return c.running + c.queued === 0;
}
