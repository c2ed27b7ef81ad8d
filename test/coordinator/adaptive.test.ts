import { describe, expect, it } from 'vitest';
import { AdaptiveLevel } from '../../src/coordinator/adaptive.js';

// --adaptive's AIMD (coordinator/adaptive.ts), step by step: each success is reported with the
// level fully used (running = level), unless a test says otherwise.

/** `n` successes at time `t`, each with the level in use. */
function succeed(a: AdaptiveLevel, n: number, t = 0): void {
  for (let i = 0; i < n; i++) a.ended('SUCCESS', t, t, a.current);
}

describe('AdaptiveLevel', () => {
  it('starts at 1 and grows by one per success (slow start) up to -j, no further', () => {
    const a = new AdaptiveLevel(8);
    expect(a.current).toBe(1);
    succeed(a, 3);
    expect(a.current).toBe(4);
    succeed(a, 20);
    expect(a.current).toBe(8);
  });

  it('grows only while the level is what holds the run back: successes with fewer running than it prove nothing', () => {
    const a = new AdaptiveLevel(8);
    succeed(a, 2);
    expect(a.current).toBe(3);
    for (let i = 0; i < 10; i++) a.ended('SUCCESS', 0, 0, 2);
    expect(a.current).toBe(3);
  });

  it('a busy answer or a timeout halves the level; answers to attempts started before that cut do not cut again', () => {
    const a = new AdaptiveLevel(16);
    succeed(a, 7);
    expect(a.current).toBe(8);
    expect(a.ended('BUSY', 100, 200, 8)).toEqual({ from: 8, to: 4, cause: 'BUSY' });
    expect(a.ended('BUSY', 150, 210, 7)).toBeNull(); // started at 150, before the cut at 200
    expect(a.current).toBe(4);
    expect(a.ended('TIMEOUT', 250, 300, 4)).toEqual({ from: 4, to: 2, cause: 'TIMEOUT' });
    expect(a.ended('BUSY', 400, 500, 2)).toEqual({ from: 2, to: 1, cause: 'BUSY' });
    expect(a.ended('BUSY', 600, 700, 1)).toEqual({ from: 1, to: 1, cause: 'BUSY' }); // never below 1
    expect(a.ended('FAILED', 800, 900, 1)).toBeNull(); // other failures say nothing about load
  });

  it('after a cut it grows back fast to just below the level that was too much, then by one per window of successes, each window longer when the same level is too much again', () => {
    const a = new AdaptiveLevel(16);
    succeed(a, 5); // 6
    a.ended('BUSY', 10, 20, 6); // 6 was too much: 3, fast back to 5
    expect(a.current).toBe(3);
    succeed(a, 2, 30);
    expect(a.current).toBe(5);
    succeed(a, 4, 30); // a window is 5 successes at level 5
    expect(a.current).toBe(5);
    succeed(a, 1, 30);
    expect(a.current).toBe(6);
    a.ended('BUSY', 40, 50, 6); // 6 again: windows twice as long
    succeed(a, 2, 60);
    expect(a.current).toBe(5);
    succeed(a, 9, 60);
    expect(a.current).toBe(5);
    succeed(a, 1, 60);
    expect(a.current).toBe(6);
  });

  it('the level that was too much is the one the busy attempt started under, not the level at its answer', () => {
    const a = new AdaptiveLevel(16);
    succeed(a, 3, 0); // 4 from t=0
    succeed(a, 4, 100); // 8 by t=100
    a.ended('BUSY', 50, 150, 8); // started at 50 under level 4
    expect(a.current).toBe(4);
    succeed(a, 1, 200); // fast regrowth stops at 3 = 4 - 1: already above it, so windows
    expect(a.current).toBe(4);
  });
});

describe('AdaptiveLevel: the pace', () => {
  it("none before the first cut; then 95% of the successes per second of the last 2 s, growing by at least 1/s per second's worth of successes", () => {
    const a = new AdaptiveLevel(16);
    // 20 successes a second for two seconds, each taking 10 ms.
    for (let t = 0; t < 2000; t += 50) a.ended('SUCCESS', t - 10, t, a.current);
    expect(a.startsPerSecond).toBeNull();
    a.ended('BUSY', 1990, 2000, a.current);
    expect(a.startsPerSecond).toBeCloseTo(0.95 * 20, 0);
    const pace = a.startsPerSecond!;
    for (let i = 0; i < Math.ceil(pace); i++) a.ended('SUCCESS', 2100, 2110 + i, 1);
    expect(a.startsPerSecond).toBeCloseTo(pace + 1, 5);
  });

  it("a busy answer within a round of the last cut (the time a success takes) is that cut's, not a new one", () => {
    const a = new AdaptiveLevel(16);
    for (let t = 0; t < 1000; t += 50) a.ended('SUCCESS', t - 200, t, a.current); // successes take 200 ms
    const level = a.current;
    expect(a.ended('BUSY', 1000, 1010, level)?.to).toBe(Math.floor(level / 2));
    expect(a.ended('BUSY', 1050, 1100, level)).toBeNull(); // 90 ms after the cut
    expect(a.ended('BUSY', 1300, 1320, level)?.cause).toBe('BUSY'); // a round later
  });
});
