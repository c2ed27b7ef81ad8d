import type { Settlement } from '../records.js';

/**
 * A settlement fenced off because its attempt was recorded LOST (its owner was taken for
 * dead, then reported after all: a frozen owner resumed, a remote host came back) still
 * says when the attempt really ended. Both stores write that end onto the LOST row, once,
 * and append this note to its error; the outcome stays LOST (the task was handed on).
 */
export function lateReportNote(s: Settlement): string {
  const what = s.outcome === 'SUCCESS' ? 'SUCCESS (result discarded)' : s.error?.startsWith(`${s.outcome}:`) ? s.error : `${s.outcome}: ${s.error ?? 'failed'}`;
  return `; its owner reported later, fenced off: ${what}`;
}
