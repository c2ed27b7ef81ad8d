import { describe, expect, it } from 'vitest';
import { etaSeconds, runningMs, tasksPerSecond, weightedOpen } from '../../src/status/busy-rate.js';

describe('runningMs: each run from its first attempt to its last, the union over runs', () => {
  const HOUR = 3_600_000;
  const cases: [string, [number, number | null, string?][], number, number][] = [
    ['nothing', [], 0, 0],
    ['one attempt', [[0, 100]], 0, 100],
    ['two of one run with a retry wait between', [[0, 100, 'a'], [10_000, 10_050, 'a']], HOUR, 10_050],
    ['two of one run further apart than any retry waits', [[0, 100, 'a'], [2 * HOUR, 2 * HOUR + 50, 'a']], HOUR, 150],
    ['two runs with an idle gap between', [[0, 100, 'a'], [10_000, 10_050, 'b']], HOUR, 150],
    ['overlapping (two workers)', [[0, 100, 'a'], [50, 150, 'b']], HOUR, 150],
    ['one inside another', [[0, 100], [10, 20]], 0, 100],
    ['out of order', [[200, 300, 'a'], [0, 100, 'a'], [90, 210, 'a']], 0, 300],
    ['an attempt still running does not count', [[0, 100, 'a'], [100, null, 'a']], HOUR, 100],
  ];
  for (const [name, spans, maxGap, expected] of cases) {
    it(`${name} → ${expected} ms`, () => {
      expect(runningMs(spans.map(([startedAt, endedAt, owner]) => ({ startedAt, endedAt, owner })), maxGap)).toBe(expected);
    });
  }
});

describe('tasksPerSecond and etaSeconds', () => {
  it('counts only running time: an hour idle between two runs changes nothing', () => {
    const a = [{ startedAt: 0, endedAt: 500, owner: 'a' }, { startedAt: 500, endedAt: 1000, owner: 'a' }];
    const b = [...a, { startedAt: 3_600_000, endedAt: 3_600_500, owner: 'b' }, { startedAt: 3_600_500, endedAt: 3_601_000, owner: 'b' }];
    expect(tasksPerSecond(a, 2, 2, 60_000)).toBe(2);
    expect(tasksPerSecond(b, 4, 4, 60_000)).toBe(2);
  });

  it('a task that took several attempts makes the task rate lower than the attempt rate', () => {
    const spans = [{ startedAt: 0, endedAt: 1000 }, { startedAt: 1000, endedAt: 2000 }];
    expect(tasksPerSecond(spans, 1, 2)).toBe(0.5);
  });

  it('a retry waited on is running time: 2 tasks whose commands took 20 ms over 10 s run at 0.2 tasks/s', () => {
    const spans = [
      { startedAt: 0, endedAt: 10, owner: 'a' },
      { startedAt: 0, endedAt: 10, owner: 'a' },
      { startedAt: 9990, endedAt: 10_000, owner: 'a' },
    ];
    expect(tasksPerSecond(spans, 2, 3, 60_000)).toBeCloseTo(0.2, 10);
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

  it('with learned durations, the open tasks weigh theirs against the succeeded ones’', () => {
    // 10 open at 0.1 tasks/s: 100 s by count; the one done took 10 s as learned, the open ones 0.1 s each.
    const work = { openKnown: 10, openMs: 1000, doneKnown: 1, doneMs: 10_000 };
    expect(weightedOpen(10, work)).toBeCloseTo(0.1, 10);
    expect(etaSeconds(10, 0.1, undefined, work)).toBe(1);
    // Open tasks without a learned duration count as one each; nothing done yet: by count alone.
    expect(weightedOpen(12, work)).toBeCloseTo(2.1, 10);
    expect(weightedOpen(10, { ...work, doneKnown: 0, doneMs: 0 })).toBe(10);
    expect(etaSeconds(10, 0.1)).toBe(100);
  });

  it('the ETA waits for the backoff ahead: the last retry’s wait plus a task, the first’s plus the retrying tasks', () => {
    // 1 open task at 10 tasks/s would be 0.1 s; its retry is due in 60 s.
    expect(etaSeconds(1, 10, { retrying: 1, firstDueInMs: 60_000, lastDueInMs: 60_000 })).toBe(61);
    // 100 open, 50 of them retrying from 30 s on, at 2 tasks/s: 30 + 25 s beats 50 s of work.
    expect(etaSeconds(100, 2, { retrying: 50, firstDueInMs: 30_000, lastDueInMs: 40_000 })).toBe(55);
    // Retries due already change nothing.
    expect(etaSeconds(10, 2, { retrying: 3, firstDueInMs: 0, lastDueInMs: 0 })).toBe(5);
  });
});
