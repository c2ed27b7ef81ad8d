import { describe, expect, it } from 'vitest';
import { durationRange, unitFor } from '../../src/report/axis.js';
import { durationBuckets } from '../../src/report/histogram.js';

describe('duration histogram buckets', () => {
  const cases: [string, number[]][] = [
    ['one value', [42]],
    ['a few ms', [1, 2, 4]],
    ['ms to a second', [3, 40, 999, 1003]],
    ['seconds', [500, 7300, 2000]],
    ['minutes', [1000, 45 * 60_000]],
    ['days', [3_600_000, 40 * 86_400_000]],
    ['a narrow band far from zero', [100_000, 100_009]],
  ];
  it.each(cases)('%s: at most 20 round buckets, every duration in one, neither end empty', (_, durations) => {
    const b = durationBuckets(durations);
    expect(b.length).toBeGreaterThanOrEqual(1);
    expect(b.length).toBeLessThanOrEqual(20);
    expect(b.reduce((n, x) => n + x.count, 0)).toBe(durations.length);
    expect(b[0]!.count).toBeGreaterThan(0);
    expect(b.at(-1)!.count).toBeGreaterThan(0);
    const step = b[0]!.to - b[0]!.from;
    for (const x of b) {
      expect(x.to - x.from).toBe(step);
      expect(x.from % step).toBe(0);
    }
    for (const d of durations) expect(b.some((x) => d >= x.from && d < x.to)).toBe(true);
  });

  it('labels read in one fitting unit, exact to the step', () => {
    const label = (from: number, to: number, top: number) => durationRange(from, to, unitFor(top, to - from));
    expect(label(10, 50, 200)).toBe('10–50 ms');
    expect(label(7000, 7500, 7500)).toBe('7–7.5 s');
    expect(label(105_000, 110_000, 110_000)).toBe('105–110 s'); // not 1.75–1.83 min
    expect(label(3 * 3_600_000, 6 * 3_600_000, 57 * 3_600_000)).toBe('3–6 h');
    expect(label(0, 2 * 86_400_000, 40 * 86_400_000)).toBe('0–2 d');
  });
});
