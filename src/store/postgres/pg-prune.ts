import type { BatchDbRow } from '../shared/db-rows.js';
import { PRUNE_CHUNK, chunkBounds, chunkDone, rangesDone, startCursor, type PruneCursor, type PruneStep } from '../shared/prune-in-chunks.js';
import type { Sql } from './pg-db.js';
import type { Statements } from './statements.js';
import { taskIdRange } from './pg-list.js';

/**
 * One short transaction of a PostgreSQL prune (see prune-in-chunks.ts): a chunk of a batch's
 * attempts, and then the tasks of their range, else the batch row. `at` is null for the
 * batch's first chunk, which takes the exact check and reads the span of the batch's ids.
 */
export async function pruneChunk(
  sql: Sql,
  st: Statements,
  b: { batch: BatchDbRow; lock: string; cutoff: number },
  at: PruneCursor | null,
): Promise<PruneStep> {
  const id = b.batch.id;
  // Lock, then check with a fresh snapshot: an enqueue or retry that committed meanwhile keeps its
  // batch. The exact check (a scan of the batch's tasks) once; the cheap one before later chunks.
  await sql.run(st.lockBatchWork, [b.lock]);
  await sql.run(st.lockBatchForDelete, [id]);
  if ((await sql.run(at === null ? st.finishedBatches : st.stillPrunable, at === null ? [b.cutoff, id] : [id, b.cutoff])) === 0) return 'live';
  at ??= startCursor(await taskIdRange(sql, st, id));
  if (rangesDone(at)) {
    await sql.run(st.deleteBatch, [id]); // anything left (a task added and finished meanwhile) goes with it
    return 'gone';
  }
  const c = chunkBounds(at);
  const rows = await sql.rows<{ task_id: unknown; id: unknown; path: string | null }>(st.pruneAttempts, [id, c.from, c.to, c.afterTask, c.afterAttempt, c.n]);
  const attempts = rows.map((r) => ({ task_id: Number(r.task_id), id: Number(r.id), path: r.path }));
  const tasks = attempts.length < PRUNE_CHUNK ? await sql.run(st.pruneTasks, [id, c.from, c.to]) : 0;
  return chunkDone(at, attempts, tasks);
}
