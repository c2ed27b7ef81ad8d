import type { PendingOutput } from '../records.js';

export interface PendingOutputRow {
  id: number | string;
  batch_id: number | string;
  task_key: string;
  output_temp: string;
  result: string | null;
}

/** A pending output's row as both stores read it: the output path is the stored result's `out`. */
export function pendingOutputOf(row: PendingOutputRow): PendingOutput {
  let out: string | null = null;
  try {
    const value: unknown = row.result === null ? null : JSON.parse(row.result);
    if (value !== null && typeof value === 'object' && typeof (value as { out?: unknown }).out === 'string') out = (value as { out: string }).out;
  } catch {
    // a result that is not JSON names no output: the file stays where it is
  }
  return { taskId: Number(row.id), batchId: Number(row.batch_id), key: row.task_key, temp: row.output_temp, out };
}
