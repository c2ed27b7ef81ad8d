import type { TaskStatus } from '../records.js';

/**
 * How the tasks of one split item (one per stage) affect each other. Both stores load an
 * item's siblings inside the transaction that changed one of them and apply what these
 * pure functions decide, so the rules live once.
 */
export interface Sibling {
  id: number;
  stage: string;
  status: TaskStatus;
  needs: string[];
  lastError: string | null;
}

/** The reason a dependent was cancelled starts with this; `retry-failed` revives only those. */
const NEEDS_PREFIX = 'needs ';

const dead = (status: TaskStatus) => status === 'FAILED' || status === 'CANCELLED';

/**
 * PENDING tasks with a need that ended FAILED or CANCELLED, and (transitively) theirs:
 * each with its reason, e.g. `needs transcode: FAILED`.
 */
export function cascadeCancel(siblings: Sibling[]): { id: number; reason: string }[] {
  const status = new Map(siblings.map((s) => [s.stage, s.status]));
  const out: { id: number; reason: string }[] = [];
  for (let changed = true; changed; ) {
    changed = false;
    for (const s of siblings) {
      if (status.get(s.stage) !== 'PENDING') continue;
      const need = s.needs.find((n) => dead(status.get(n) ?? 'PENDING'));
      if (need === undefined) continue;
      out.push({ id: s.id, reason: `${NEEDS_PREFIX}${need}: ${status.get(need)}` });
      status.set(s.stage, 'CANCELLED');
      changed = true;
    }
  }
  return out;
}

/**
 * After failed tasks were reset to PENDING: the tasks cancelled because of a need that
 * no longer failed (transitively), to return to PENDING. Tasks cancelled by `cancel`
 * stay cancelled.
 */
export function cascadeRevive(siblings: Sibling[]): number[] {
  const status = new Map(siblings.map((s) => [s.stage, s.status]));
  const out: number[] = [];
  for (let changed = true; changed; ) {
    changed = false;
    for (const s of siblings) {
      if (status.get(s.stage) !== 'CANCELLED' || !s.lastError?.startsWith(NEEDS_PREFIX)) continue;
      if (s.needs.some((n) => dead(status.get(n) ?? 'PENDING'))) continue;
      out.push(s.id);
      status.set(s.stage, 'PENDING');
      changed = true;
    }
  }
  return out;
}
