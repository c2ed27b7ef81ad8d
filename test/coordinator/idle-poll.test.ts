import { describe, expect, it } from 'vitest';
import { IDLE_POLL_MAX_MS, IdlePoll } from '../../src/coordinator/idle-poll.js';

const waits = (p: IdlePoll, n: number, watchful = false) => Array.from({ length: n }, () => p.next(watchful));

describe('IdlePoll: the wait after a look that found nothing', () => {
  it('starts at the poll interval and doubles up to a third of the lease', () => {
    expect(waits(new IdlePoll(1000, 30_000), 7)).toEqual([1000, 2000, 4000, 8000, 10_000, 10_000, 10_000]);
    expect(waits(new IdlePoll(50, 1200), 6)).toEqual([50, 100, 200, 400, 400, 400]);
  });

  it(`never waits longer than ${IDLE_POLL_MAX_MS} ms, however long the lease`, () => {
    expect(Math.max(...waits(new IdlePoll(1000, 3_600_000), 20))).toBe(IDLE_POLL_MAX_MS);
  });

  it('never waits less than the poll interval, however short the lease', () => {
    expect(waits(new IdlePoll(1000, 600), 3)).toEqual([1000, 1000, 1000]);
  });

  it('a look that found work starts it again at the poll interval', () => {
    const p = new IdlePoll(50, 1200);
    waits(p, 5);
    p.found();
    expect(waits(p, 3)).toEqual([50, 100, 200]);
  });

  it('stays at the poll interval while a live coordinator on this machine holds tasks, and starts over after', () => {
    const p = new IdlePoll(50, 1200);
    waits(p, 4);
    expect(waits(p, 3, true)).toEqual([50, 50, 50]);
    expect(waits(p, 2)).toEqual([50, 100]);
  });

  it('the batch moving between looks (its counts changed) starts it again at the poll interval; standing still lets it grow', () => {
    const p = new IdlePoll(50, 1200);
    expect([p.next(false, 'a'), p.next(false, 'a'), p.next(false, 'a')]).toEqual([50, 100, 200]);
    expect([p.next(false, 'b'), p.next(false, 'c'), p.next(false, 'c')]).toEqual([50, 50, 100]);
    // A look that did not read the batch neither resets nor forgets what it looked like.
    expect([p.next(false, null), p.next(false, 'c'), p.next(false, 'd')]).toEqual([200, 400, 50]);
  });
});
