/**
 * Steps of this process's wall clock (settimeofday, an NTP step, a VM resumed), seen against
 * its monotonic clock: their difference stays put while neither steps, and moves by the step
 * when the wall clock does. Durations inside a process are measured on `monotonicMs`; what a
 * process stores is on the wall clock, and a step seen here is what it re-bases them by.
 */

/** A jump at least this large (ms) is a step, not drift or the rounding of Date.now(). */
const STEP_MS = 250;

/** A clock that never steps, for durations within this process (the clock Node's timers run on). */
export const monotonicMs = (): number => performance.now();

const skewNow = () => Date.now() - (performance.timeOrigin + performance.now());

export class WallSteps {
  private skew = skewNow();

  /** The wall clock's step since the last one seen (ms, positive forward), or 0. */
  take(): number {
    const skew = skewNow();
    const step = skew - this.skew;
    if (Math.abs(step) < STEP_MS) return 0;
    this.skew = skew;
    return Math.round(step);
  }
}
