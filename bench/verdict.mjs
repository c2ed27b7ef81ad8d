// Figures derived from medians: ratios, splitdance's own cost per task, and the goal verdicts.

/** How many times faster than `base` (by wall time) `me` did the same work: 1.2 = 20% faster. */
export const speedup = (me, base) => base.wall / me.wall;

/**
 * splitdance's own cost per task in µs, beyond a baseline that did the same tasks with the
 * same number of slots. Wall: the time each slot spent per task beyond the baseline's, i.e.
 * (wall − base wall) / tasks × slots. CPU: the extra CPU of splitdance and all its processes,
 * (cpu − base cpu) / tasks. Where spawning is slow a ratio hides this cost; this figure does
 * not depend on how fast the machine starts processes.
 */
export function ownCost(me, base, tasks, slots) {
  return {
    slots,
    wall: ((me.wall - base.wall) / tasks) * slots * 1e6,
    cpu: ((me.cpu - base.cpu) / tasks) * 1e6,
  };
}

/** A goal `measured ≥ bound`, judged on this run's figure. */
export const atLeast = (text, value, bound, shown) => ({ text, met: value >= bound, shown });
/** A goal `measured ≤ bound`, judged on this run's figure. */
export const atMost = (text, value, bound, shown) => ({ text, met: value <= bound, shown });
/** A goal `measured < bound`, judged on this run's figure. */
export const below = (text, value, bound, shown) => ({ text, met: value < bound, shown });

/** "met (1.18× xargs -P2)" or "not met (…)", one line per goal. */
export const verdicts = (goals) => goals.map((g) => `${g.met ? 'met' : 'not met'} (${g.text}: ${g.shown})`);

/** A ratio as printed; verdicts print three digits, so that 0.996× never reads as a met 1.00×. */
export const times = (x, digits = 2) => `${x.toFixed(digits)}×`;
