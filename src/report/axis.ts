/** Chart axes: round steps and durations written in one unit, so neighbouring labels read alike. */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Round durations a bucket or tick step may take, smallest first (then whole days on 1-2-5). */
const DURATION_STEPS = [
  ...[1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500],
  ...[1, 2, 5, 10, 15, 20, 30].map((s) => s * SECOND),
  ...[1, 2, 5, 10, 15, 20, 30].map((m) => m * MINUTE),
  ...[1, 2, 3, 6, 12].map((h) => h * HOUR),
];

/** The smallest round duration of at least `ms`. */
export function roundDurationStep(ms: number): number {
  for (const s of DURATION_STEPS) if (s >= ms) return s;
  return niceCount(ms / DAY) * DAY;
}

/** The smallest of 1, 2, 5, 10, 20, 50… that is at least `n` (at least 1). */
export function niceCount(n: number): number {
  let p = 1;
  for (;;) {
    for (const m of [1, 2, 5]) if (m * p >= n) return m * p;
    p *= 10;
  }
}

export interface DurationUnit {
  name: string;
  ms: number;
}

const UNITS: DurationUnit[] = [
  { name: 'ms', ms: 1 },
  { name: 's', ms: SECOND },
  { name: 'min', ms: MINUTE },
  { name: 'h', ms: HOUR },
  { name: 'd', ms: DAY },
];

/**
 * The unit for labels up to `top` that step by `step`: the smallest that keeps numbers under
 * 100 (under 1000 for ms: `10–50 ms`, `7–7.5 s`, not `7000–7500 ms`) among those where the step is exact in two decimals
 * (5 s steps never read `0.08 min`); the largest exact one when none stays under 100.
 * Without a step (ticks at fractions of a span) every unit is exact enough.
 */
export function unitFor(top: number, step?: number): DurationUnit {
  const exact = step === undefined ? UNITS : UNITS.filter((u) => Number.isInteger(Math.round((step / u.ms) * 1e6) / 1e4));
  return exact.find((u) => top / u.ms < (u.ms === 1 ? 1000 : 100)) ?? exact.at(-1) ?? UNITS[0]!;
}

/** A number of `unit`s, without trailing zeros: 1.5, 90, 0.25. */
export function inUnit(ms: number, unit: DurationUnit): string {
  return String(Number((ms / unit.ms).toFixed(2)));
}

/** `10–50 ms`, `1.5–2 s`: a bucket's range in one unit. */
export function durationRange(from: number, to: number, unit: DurationUnit): string {
  return `${inUnit(from, unit)}–${inUnit(to, unit)} ${unit.name}`;
}
