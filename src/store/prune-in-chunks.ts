import type { BatchRecord, PruneResult } from './records.js';

/**
 * Rows per prune transaction: a few milliseconds of deleting, so a run sharing the store waits
 * that long at most for the write lock (one transaction for a 1.2M-task batch held it ~10 s).
 */
export const PRUNE_CHUNK = 2000;

/** What one short transaction of a prune did: a chunk of attempts, else of tasks, else the batch row. */
export type PruneStep = { attempts: number; tasks: number; logPaths: string[] } | 'live' | 'gone';

/**
 * `pruneFinished` of both stores: each finished batch is deleted by `step` (one transaction
 * per call, `first` for the batch's first) until it is gone, or came back to life meanwhile (a
 * run enqueued: it keeps what is left). Each chunk's log paths go to `onChunk` once it has
 * committed, else into the result. `pause` runs after every step (SQLite leaves waiting
 * writers the lock).
 */
export async function pruneInChunks<B extends Pick<BatchRecord, 'name'>>(
  batches: B[],
  step: (batch: B, first: boolean) => Promise<PruneStep>,
  onChunk: ((batch: string, logPaths: string[]) => void) | undefined,
  pause?: (stepMs: number) => Promise<void>,
): Promise<PruneResult> {
  const result: PruneResult = { batches: [], tasks: 0, attempts: 0, logPaths: [] };
  for (const b of batches) {
    for (let first = true; ; first = false) {
      const started = performance.now();
      const done = await step(b, first);
      await pause?.(performance.now() - started);
      if (done === 'live') break;
      if (done === 'gone') {
        result.batches.push(b.name);
        break;
      }
      result.attempts += done.attempts;
      result.tasks += done.tasks;
      if (done.logPaths.length === 0) continue;
      if (onChunk) onChunk(b.name, done.logPaths);
      else result.logPaths.push(...done.logPaths);
    }
  }
  return result;
}
