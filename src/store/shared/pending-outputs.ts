import type { PendingOutput } from '../records.js';

/** A pending output's row as both stores read it: the output path is the stored result's `out`. */
export function pendingOutputOf(row: { id: number | string; output_temp: string; result: string | null }): PendingOutput {
  let out: string | null = null;
  try {
    const value: unknown = row.result === null ? null : JSON.parse(row.result);
    if (value !== null && typeof value === 'object' && typeof (value as { out?: unknown }).out === 'string') out = (value as { out: string }).out;
  } catch {
    // a result that is not JSON names no output: the file stays where it is
  }
  return { taskId: Number(row.id), temp: row.output_temp, out };
}
