/** --adaptive levels as status and watch show them: what each run and worker of a batch keeps running at now. */
import { LEVEL_REFRESH_MS } from '../store/task-spec.js';
import type { BatchProgress, BatchRecord } from '../store/task-store.js';

export interface LiveLevel {
  owner: string;
  /** Attempts it keeps running at most now, of `max` (its -j). */
  level: number;
  max: number;
  /** Starts per second it keeps to (set at its first busy answer), or null. */
  pace: number | null;
}

/** The levels published lately (a run killed without removing its own stops showing within half a minute), highest first. */
export async function liveLevels(store: Pick<BatchProgress, 'adaptiveLevels'>, batch: BatchRecord, now: number): Promise<LiveLevel[]> {
  const rows = await store.adaptiveLevels(batch.id, now - 3 * LEVEL_REFRESH_MS);
  return rows.map(({ owner, level, max, pace }) => ({ owner, level, max, pace }));
}

/** `--adaptive: at most 5 of 16 attempts running at once`, one level per run or worker; null without any. */
export function describeLevels(levels: LiveLevel[]): string | null {
  if (levels.length === 0) return null;
  if (levels.length === 1) {
    const [l] = levels as [LiveLevel];
    return `--adaptive: at most ${l.level} of ${l.max} attempts running at once${l.pace === null ? '' : `, ${l.pace.toFixed(1)} starts/s`}`;
  }
  const shown = levels.slice(0, 4).map((l) => `${l.level}/${l.max}`);
  const more = levels.length > 4 ? ` +${levels.length - 4} more` : '';
  return `--adaptive: ${levels.length} runs or workers at most ${shown.join(', ')}${more} at once`;
}
