/** The arithmetic of a batch's rate gate (--rate), the same on both stores: how many may start now, and when the next may. */

/** What a gate grants a claim: `granted` starts now; the gate's next start time; when one more may start. */
export interface Gate {
  granted: number;
  next: number;
  /** When the next start is allowed (after `now`): a claim that got fewer than it wanted waits until then. */
  wakeAt: number;
}

/**
 * Starts at most `want` now. Each start takes the gate's next time and moves it on by
 * `spacingMs`; a gate left behind by an idle spell counts at most `burst` starts' worth
 * of the past, so a pause never saves up more than a tenth of a second of starts.
 */
export function grant(stored: number | null, want: number, now: number, spacingMs: number, burst: number): Gate {
  const base = Math.max(stored ?? now, now - spacingMs * (burst - 1));
  const granted = base > now ? 0 : Math.min(want, 1 + Math.floor((now - base) / spacingMs));
  const next = base + granted * spacingMs;
  return { granted, next, wakeAt: Math.max(now + 1, next) };
}
