import type { TaskFilter, TaskRow } from '../records.js';
import type { Sql } from './pg-db.js';
import { toTaskRow, type TaskDbRow } from '../shared/db-rows.js';
import type { Statements } from './statements.js';

/** Rows per FETCH: memory stays bounded however many tasks the JS predicates reject. */
const FETCH_SIZE = 1000;

/**
 * The tasks matching `filter`, in its order, streamed through a server-side cursor (call
 * inside a transaction): the SQL narrows by status, error text and attempts, the JS
 * predicates (globs, error signatures) by key and error, and reading stops at `limit`.
 */
export async function selectTasks(sql: Sql, st: Statements, filter: TaskFilter): Promise<TaskRow[]> {
  const out: TaskRow[] = [];
  if (filter.limit !== undefined && filter.limit <= 0) return out;
  const query = filter.order === 'slowest' ? st.slowestTasks : st.listTasks;
  const params = [filter.batchId, filter.status ?? null, filter.attemptedOnly ? true : null, filter.errorContains ?? null];
  const unfiltered = !filter.keyMatches && !filter.errorMatches;
  const size = unfiltered && filter.limit !== undefined ? Math.min(filter.limit, FETCH_SIZE) : FETCH_SIZE;
  // The transaction's end closes the cursor too; closing it here lets retryFailed go on writing.
  await sql.run(`DECLARE task_list NO SCROLL CURSOR FOR ${query.text}`, params);
  await fill(sql, filter, size, out);
  await sql.run('CLOSE task_list');
  return out;
}

async function fill(sql: Sql, filter: TaskFilter, size: number, out: TaskRow[]): Promise<void> {
  for (;;) {
    const rows = await sql.rows<TaskDbRow>(`FETCH ${size} FROM task_list`);
    for (const row of rows) {
      if (filter.keyMatches && !filter.keyMatches(row.task_key)) continue;
      if (filter.errorMatches && !filter.errorMatches(row.last_error)) continue;
      out.push(toTaskRow(row));
      if (filter.limit !== undefined && out.length >= filter.limit) return;
    }
    if (rows.length < size) return;
  }
}

/** The span of the batch's task ids (null and null: it has none), for work done range by range. */
export async function taskIdRange(sql: Sql, st: Statements, batchId: number): Promise<{ lo: number | null; hi: number | null }> {
  const [row] = await sql.rows<{ lo: unknown; hi: unknown }>(st.taskIdRange, [batchId]);
  // bigint columns come back as text
  return { lo: row?.lo == null ? null : Number(row.lo), hi: row?.hi == null ? null : Number(row.hi) };
}
