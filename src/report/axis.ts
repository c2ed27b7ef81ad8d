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

/** The unit to write durations of this size in: a step of 30 s reads "60–90 s", of 100 ms "1000–1100 ms". */
export function unitFor(ms: number): DurationUnit {
  if (ms < SECOND) return { name: 'ms', ms: 1 };
  if (ms < MINUTE) return { name: 's', ms: SECOND };
  if (ms < HOUR) return { name: 'min', ms: MINUTE };
  if (ms < DAY) return { name: 'h', ms: HOUR };
  return { name: 'd', ms: DAY };
}

/** A number of `unit`s, without trailing zeros: 1.5, 90, 0.25. */
export function inUnit(ms: number, unit: DurationUnit): string {
  return String(Number((ms / unit.ms).toFixed(2)));
}

/** `10–50 ms`, `1.5–2 s`: a bucket's range in one unit. */
export function durationRange(from: number, to: number, unit: DurationUnit): string {
  return `${inUnit(from, unit)}–${inUnit(to, unit)} ${unit.name}`;
}
