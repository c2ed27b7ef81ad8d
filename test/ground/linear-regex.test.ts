import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { linearRegExp, splitWithin } from '../../src/linear-regex.js';

describe('splitWithin', () => {
  it('splits exactly as String.prototype.split does', () => {
    const pattern = fc.constantFrom(',', ',?', 'a*', '(,)', '(?:)', '(a)|(b)', ',+|;', 'x*?', '\\s+', '(?:a|ab)(c|bcd)?', '^', '$', '\\b');
    const text = fc.array(fc.constantFrom('a', 'b', ',', ';', ' ', 'c', 'd', 'x', 'é'), { maxLength: 12 }).map((p) => p.join(''));
    fc.assert(
      fc.property(pattern, text, (source, t) => {
        expect(splitWithin(t, linearRegExp(source), 10_000)).toEqual(t.split(new RegExp(source)));
      }),
      { numRuns: 2000 },
    );
  });

  it('gives up past its budget where each search reads the rest of the text', () => {
    // `,[^y]*y|,` against commas alone: each field's search reads to the end for a `y`, so the
    // split is quadratic: 200,000 commas take minutes. One search is linear, so it stops soon
    // after the budget.
    const started = performance.now();
    expect(splitWithin(','.repeat(200_000), linearRegExp(',[^y]*y|,'), 200)).toBeNull();
    expect(performance.now() - started).toBeLessThan(10_000);
    // An ordinary separator on a long item finishes well inside the budget.
    expect(splitWithin('a,'.repeat(500_000), linearRegExp(','), 30_000)).toHaveLength(500_001);
  }, 30_000);
});
