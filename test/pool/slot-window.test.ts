import { describe, expect, it } from 'vitest';
import { averaged, runningLong, slotWindow } from '../../src/pool/slot-window.js';

// SPEC §5 queued attempts: every slot holds its next attempt (a window of at least 2), more
// for short attempts (about 4 ms of queued work, at most 64 in all), none behind a slow one.
describe('how many attempts a slot holds', () => {
  const now = 1_000_000;
  it('one next attempt before any duration is known, and for attempts of any length', () => {
    expect(slotWindow({ avgMs: null, headSince: now }, 0, null, now)).toBe(2);
    for (const avgMs of [5, 100, 60_000, 3_600_000]) expect(slotWindow({ avgMs, headSince: now }, 1, null, now)).toBe(2);
  });

  it('about 4 ms of queued work for short attempts, at most 64 in all', () => {
    expect(slotWindow({ avgMs: 1, headSince: now }, 1, null, now)).toBe(5);
    expect(slotWindow({ avgMs: 0.5, headSince: now }, 1, null, now)).toBe(9);
    expect(slotWindow({ avgMs: 0.001, headSince: now }, 1, null, now)).toBe(64);
  });

  it('nothing more behind an attempt running far longer than usual', () => {
    expect(slotWindow({ avgMs: 10, headSince: now - 35 }, 2, null, now)).toBe(1);
    expect(slotWindow({ avgMs: 10, headSince: now - 20 }, 2, null, now)).toBe(2);
    expect(runningLong({ avgMs: 10, headSince: now - 1500 }, 1000, now)).toBe(true);
    expect(runningLong({ avgMs: 600, headSince: now - 1500 }, 1000, now)).toBe(false); // usual for it
  });

  it('never more than the slot has left before it is recycled', () => {
    expect(slotWindow({ avgMs: 0.1, headSince: now }, 1, 3, now)).toBe(3);
    expect(slotWindow({ avgMs: null, headSince: now }, 0, 1, now)).toBe(1);
  });

  it('averages durations with the newest weighted 0.2', () => {
    expect(averaged({ avgMs: null, headSince: now }, 10)).toBe(10);
    expect(averaged({ avgMs: 10, headSince: now }, 20)).toBe(12);
  });
});
