import { describe, expect, it } from 'vitest';
import { PollBackoff } from '../../src/run/poll-backoff.js';

const waits = (p: PollBackoff, n: number) => Array.from({ length: n }, () => p.next());

describe('PollBackoff: the wait between looks that found nothing', () => {
  it.each([
    // first, max, the waits in a row: doubling up to the bound, never above it
    { first: 2000, max: 10_000, expected: [2000, 4000, 8000, 10_000, 10_000, 10_000] },
    { first: 500, max: 500, expected: [500, 500, 500] },
    { first: 100, max: 250, expected: [100, 200, 250, 250] },
    { first: 3000, max: 3000, expected: [3000, 3000] },
  ])('from $first ms up to $max ms', ({ first, max, expected }) => {
    expect(waits(new PollBackoff(first, max), expected.length)).toEqual(expected);
  });

  it('without a bound it is a fixed interval', () => {
    expect(waits(new PollBackoff(500), 4)).toEqual([500, 500, 500, 500]);
  });

  it('a look that found something starts it again at the first wait', () => {
    const p = new PollBackoff(2000, 10_000);
    waits(p, 5);
    p.found();
    expect(waits(p, 3)).toEqual([2000, 4000, 8000]);
  });

  it('says how often it looks, as the waiting commands print it', () => {
    expect(new PollBackoff(500).describe()).toBe('every 500 ms');
    expect(new PollBackoff(2000, 10_000).describe()).toBe('every 2–10 s');
  });
});
