import { describe, expect, it } from 'vitest';
import { durationRange, unitFor } from '../../src/report/axis.js';
import { durationBuckets } from '../../src/report/histogram.js';
import { tick } from '../../src/report/charts.js';

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

// Issue 41: the timeline's axis read `+0.71 min`; from a minute on it reads as a clock.
describe('timeline ticks', () => {
  it('read as a clock from a minute to 100 hours, in one unit otherwise, five apart', () => {
    const ticks = (span: number) => [0, 0.25, 0.5, 0.75, 1].map((f) => tick(span * f, span));
    expect(ticks(171_000)).toEqual(['0:00', '0:43', '1:26', '2:08', '2:51']);
    expect(ticks(2 * 3_600_000)).toEqual(['0:00', '30:00', '1:00:00', '1:30:00', '2:00:00']);
    expect(ticks(21_000)).toEqual(['0 s', '5.25 s', '10.5 s', '15.75 s', '21 s']);
    expect(ticks(800)).toEqual(['0 ms', '200 ms', '400 ms', '600 ms', '800 ms']);
    expect(new Set(ticks(60_000)).size).toBe(5);
  });
});
