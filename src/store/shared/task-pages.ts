import type { TaskFilter, TaskOutcome, TaskRow, TaskStatus } from '../records.js';
import { toTaskRow, type TaskDbRow } from './db-rows.js';

/**
 * Task ids per page of a listing: a page holds at most this many rows (with their payloads and
 * results), whatever the batch's size. `tasks --json` of 4.5M tasks once built one array of
 * them all (0.6–1.4 GB per million tasks) and ended "Invalid string length".
 */
const PAGE_IDS = 500;

/**
 * `eachTaskPage` of both stores: the batch's tasks with ids lo…hi, read range by range
 * (`read` takes a range of ids and returns its rows matching the filter's SQL part, in id
 * order), narrowed by the filter's JS predicates and cut at its limit; `onPage` is awaited
 * before the next range is read. Each range is its own short read: no snapshot or cursor is
 * held while a slow reader takes the output, and each task is listed once, as it was when its
 * range was read.
 */
export async function eachTaskPage(
  range: { lo: number | null; hi: number | null },
  filter: TaskFilter,
  read: (from: number, to: number) => Promise<TaskDbRow[]>,
  onPage: (tasks: TaskRow[]) => Promise<void>,
): Promise<void> {
  if (range.lo === null || range.hi === null) return;
  let left = filter.limit ?? Number.POSITIVE_INFINITY;
  for (let from = range.lo; from <= range.hi && left > 0; from += PAGE_IDS) {
    const page: TaskRow[] = [];
    for (const row of await read(from, Math.min(range.hi, from + PAGE_IDS - 1))) {
      if (filter.keyMatches && !filter.keyMatches(row.task_key)) continue;
      if (filter.errorMatches && !filter.errorMatches(row.last_error)) continue;
      page.push(toTaskRow(row));
      if (page.length >= left) break;
    }
    left -= page.length;
    if (page.length > 0) await onPage(page);
  }
}

/** A row of the outcome pages (`results`): five columns of the tasks table. */
export interface OutcomeDbRow {
  task_key: string;
  stage: string;
  status: TaskStatus;
  last_error: string | null;
  result: string | null;
}

/** A row of outcomePage's five columns as `results` prints it (PostgreSQL's rows; SQLite reads arrays). */
export function toOutcome(r: OutcomeDbRow): TaskOutcome {
  return { key: r.task_key, stage: r.stage, status: r.status, lastError: r.last_error, result: r.result };
}

/**
 * As eachTaskPage, for rows of five columns that `read` gives as outcomes (no payload to parse,
 * no JS filter): what `results` prints.
 */
export async function eachOutcomePage(
  range: { lo: number | null; hi: number | null },
  read: (from: number, to: number) => Promise<TaskOutcome[]>,
  onPage: (rows: TaskOutcome[]) => Promise<void>,
): Promise<void> {
  if (range.lo === null || range.hi === null) return;
  for (let from = range.lo; from <= range.hi; from += PAGE_IDS) {
    const rows = await read(from, Math.min(range.hi, from + PAGE_IDS - 1));
    if (rows.length > 0) await onPage(rows);
  }
}
