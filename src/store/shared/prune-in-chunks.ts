import type { BatchRecord, PruneResult } from '../records.js';

/**
 * Rows per prune transaction: a few milliseconds of deleting, so a run sharing the store waits
 * that long at most for the write lock (one transaction for a 1.2M-task batch held it ~10 s).
 */
export const PRUNE_CHUNK = 2000;

/**
 * Where the prune of one batch is. Its tasks go by ranges of PRUNE_CHUNK ids from `from` up to
 * `hi` (the batch's largest task id when the prune began), each range's attempts first, in
 * (task id, attempt id) order after `after`. Every chunk reads its own rows through the primary
 * key and the attempts' index, and never the rows of chunks already deleted: a chunk that
 * looked for "the batch's first attempts" walked every task whose attempts were gone, so a
 * prune was quadratic in the batch's size (1M tasks 49 s, 4.5M 1,024 s).
 */
export interface PruneCursor {
  from: number;
  hi: number;
  after: { task: number; attempt: number };
}

/** The cursor of a batch whose task ids span lo…hi (null: it has no task left). */
export function startCursor(range: { lo: number | null; hi: number | null }): PruneCursor {
  return range.lo === null || range.hi === null ? { from: 1, hi: 0, after: NONE } : { from: range.lo, hi: range.hi, after: NONE };
}

const NONE = { task: 0, attempt: 0 };

/** The bounds a chunk's statements take: the range of task ids, the last attempt deleted, the chunk size. */
export function chunkBounds(at: PruneCursor): { from: number; to: number; afterTask: number; afterAttempt: number; n: number } {
  return { from: at.from, to: Math.min(at.hi, at.from + PRUNE_CHUNK - 1), afterTask: at.after.task, afterAttempt: at.after.attempt, n: PRUNE_CHUNK };
}

/**
 * What one chunk did, from the attempts it deleted and, once the range's attempts were all
 * gone (fewer than a chunk of them), the tasks of the range it deleted after them.
 */
export function chunkDone(at: PruneCursor, attempts: { task_id: number; id: number; path: string | null }[], tasks: number): PruneStep {
  const logPaths = attempts.flatMap((a) => (a.path === null ? [] : [a.path]));
  if (attempts.length >= PRUNE_CHUNK) {
    // RETURNING gives no order: the chunk took the first PRUNE_CHUNK in (task, attempt) order, so the last is the largest.
    let last = NONE;
    for (const a of attempts) if (a.task_id > last.task || (a.task_id === last.task && a.id > last.attempt)) last = { task: a.task_id, attempt: a.id };
    return { attempts: attempts.length, tasks: 0, logPaths, next: { ...at, after: last } };
  }
  return { attempts: attempts.length, tasks, logPaths, next: { from: chunkBounds(at).to + 1, hi: at.hi, after: NONE } };
}

/** The range is past the batch's last task: what is left is the batch row. */
export const rangesDone = (at: PruneCursor): boolean => at.from > at.hi;

/** What one short transaction of a prune did: a chunk of attempts (and tasks), or the batch row. */
export type PruneStep = { attempts: number; tasks: number; logPaths: string[]; next: PruneCursor } | 'live' | 'gone';

/**
 * `pruneFinished` of both stores: each finished batch is deleted by `step` (one transaction
 * per call, `at` null for the batch's first) until it is gone, or came back to life meanwhile
 * (a run enqueued: it keeps what is left). Each chunk's log paths go to `onChunk` once it has
 * committed, else into the result. `pause` runs after every step (SQLite leaves waiting
 * writers the lock).
 */
export async function pruneInChunks<B extends Pick<BatchRecord, 'name'>>(
  batches: B[],
  step: (batch: B, at: PruneCursor | null) => Promise<PruneStep>,
  onChunk: ((batch: string, logPaths: string[]) => void) | undefined,
  pause?: (stepMs: number) => Promise<void>,
): Promise<PruneResult> {
  const result: PruneResult = { batches: [], tasks: 0, attempts: 0, logPaths: [] };
  for (const b of batches) {
    for (let at: PruneCursor | null = null; ; ) {
      const started = performance.now();
      const done = await step(b, at);
      await pause?.(performance.now() - started);
      if (done === 'live') break;
      if (done === 'gone') {
        result.batches.push(b.name);
        break;
      }
      at = done.next;
      result.attempts += done.attempts;
      result.tasks += done.tasks;
      if (done.logPaths.length === 0) continue;
      if (onChunk) onChunk(b.name, done.logPaths);
      else result.logPaths.push(...done.logPaths);
    }
  }
  return result;
}
