import type { Counts, TaskStatus } from '../task-store.js';

export { toAttemptRow, toBatch, toClaimedTask, toTaskRow, type AttemptDbRow, type BatchDbRow, type TaskDbRow } from '../db-rows.js';

/** One group of the `counts` statement. */
export interface CountDbRow {
  status: TaskStatus;
  tried: boolean;
  n: number;
}

export function toCounts(rows: CountDbRow[]): Counts {
  const c: Counts = { total: 0, pending: 0, retrying: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 };
  for (const r of rows) {
    c.total += r.n;
    if (r.status === 'PENDING') c[r.tried ? 'retrying' : 'pending'] += r.n;
    else if (r.status === 'RUNNING') c.running += r.n;
    else if (r.status === 'SUCCESS') c.succeeded += r.n;
    else if (r.status === 'FAILED') c.failed += r.n;
    else if (r.status === 'CANCELLED') c.cancelled += r.n;
  }
  return c;
}
