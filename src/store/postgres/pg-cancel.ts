import type { CancelResult, TaskFilter } from '../records.js';
import type { Sql } from './pg-db.js';
import { taskIdRange } from './pg-list.js';
import { cascade } from './pg-stages.js';
import type { Statements } from './statements.js';

/** Task ids per range of a cancel: one statement each, its id array bounded. */
const ID_CHUNK = 10_000;
/** The reason a task `cancel` ended gets. */
const CANCELLED = 'cancelled';

/**
 * `cancel` in the caller's transaction, range of ids by range (see QueryStore's cancel): first
 * every matching task is ended or asked to stop, then the stage tasks needing them follow, from
 * the items of the tasks this cancel reached (found again by its time and reason, not kept).
 */
export async function cancel(sql: Sql, st: Statements, filter: Pick<TaskFilter, 'batchId' | 'keyMatches'>, now: number): Promise<CancelResult> {
  const result: CancelResult = { cancelled: 0, stopping: 0, dependents: 0 };
  const batchId = filter.batchId;
  const { lo, hi } = await taskIdRange(sql, st, batchId);
  if (lo === null || hi === null) return result;
  for (let from = lo; from <= hi; from += ID_CHUNK) {
    const open = await sql.rows<{ id: unknown; task_key: string }>(st.openTasks, [batchId, from, Math.min(hi, from + ID_CHUNK - 1)]);
    const ids = open.filter((t) => !filter.keyMatches || filter.keyMatches(t.task_key)).map((t) => t.id);
    if (ids.length === 0) continue;
    for (const r of await sql.rows<{ status: string }>(st.cancelTasks, [ids, CANCELLED, now])) {
      if (r.status === 'RUNNING') result.stopping++;
      else result.cancelled++;
    }
  }
  for (let from = lo; from <= hi; from += ID_CHUNK) {
    const rows = await sql.rows<{ item_key: string }>(st.cancelledItems, [batchId, from, Math.min(hi, from + ID_CHUNK - 1), CANCELLED, now]);
    if (rows.length > 0) result.dependents += await cascade(sql, st, batchId, rows.map((r) => r.item_key), now);
  }
  return result;
}
