import { describe, expect, it } from 'vitest';
import { busyMs, etaSeconds, tasksPerSecond } from '../../src/status/busy-rate.js';

describe('busyMs: the time at least one attempt ran', () => {
  const cases: [string, [number, number | null][], number][] = [
    ['nothing', [], 0],
    ['one attempt', [[0, 100]], 100],
    ['two in a row with an idle gap between', [[0, 100], [10_000, 10_050]], 150],
    ['overlapping (two workers)', [[0, 100], [50, 150]], 150],
    ['one inside another', [[0, 100], [10, 20]], 100],
    ['out of order', [[200, 300], [0, 100], [90, 210]], 300],
    ['an attempt still running does not count', [[0, 100], [100, null]], 100],
  ];
  for (const [name, spans, expected] of cases) {
    it(`${name} → ${expected} ms`, () => {
      expect(busyMs(spans.map(([startedAt, endedAt]) => ({ startedAt, endedAt })))).toBe(expected);
    });
  }
});

describe('tasksPerSecond and etaSeconds', () => {
  it('counts only running time: an hour idle between two runs changes nothing', () => {
    const a = [{ startedAt: 0, endedAt: 500 }, { startedAt: 500, endedAt: 1000 }];
    const b = [...a, { startedAt: 3_600_000, endedAt: 3_600_500 }, { startedAt: 3_600_500, endedAt: 3_601_000 }];
    expect(tasksPerSecond(a, 2, 2)).toBe(2);
    expect(tasksPerSecond(b, 4, 4)).toBe(2);
  });

  it('a task that took several attempts makes the task rate lower than the attempt rate', () => {
    const spans = [{ startedAt: 0, endedAt: 1000 }, { startedAt: 1000, endedAt: 2000 }];
    expect(tasksPerSecond(spans, 1, 2)).toBe(0.5);
  });

  it('is null before anything ended', () => {
    expect(tasksPerSecond([{ startedAt: 0, endedAt: null }], 0, 0)).toBeNull();
  });

  it('the ETA is 0 only when nothing is open, and at least 1 s otherwise', () => {
    expect(etaSeconds(0, 5)).toBe(0);
    expect(etaSeconds(3, 1000)).toBe(1);
    expect(etaSeconds(10, 2)).toBe(5);
    expect(etaSeconds(3, null)).toBeNull();
  });
});
