import { describe, expect, it } from 'vitest';
import { backoffDelay, type BackoffPolicy } from '../../src/coordinator/backoff.js';

const S = 1000;
const H = 3600 * S;
const defaults: BackoffPolicy = { backoffMs: 5 * S, factor: 5, maxBackoffMs: H, jitter: 0.1 };
const noJitter: BackoffPolicy = { ...defaults, jitter: 0 };
const pinned = (v: number) => () => v;

describe('backoffDelay', () => {
  // [retry k, policy, random(), expected ms]
  const cases: [string, number, BackoffPolicy, number, number][] = [
    ['defaults, retry 1', 1, noJitter, 0.5, 5_000],
    ['defaults, retry 2', 2, noJitter, 0.5, 25_000],
    ['defaults, retry 3', 3, noJitter, 0.5, 125_000],
    ['defaults, retry 4', 4, noJitter, 0.5, 625_000],
    ['defaults, retry 5', 5, noJitter, 0.5, 3_125_000],
    ['defaults, retry 6 capped at 1h', 6, noJitter, 0.5, H],
    ['defaults, retry 20 capped at 1h', 20, noJitter, 0.5, H],
    ['jittered defaults, random 0.5 → no spread', 1, defaults, 0.5, 5_000],
    ['jittered defaults, random 0.5, retry 3', 3, defaults, 0.5, 125_000],
    ['cap below the first delay', 1, { ...noJitter, maxBackoffMs: 2 * S }, 0.5, 2_000],
    ['cap at 30s', 3, { ...noJitter, maxBackoffMs: 30 * S }, 0.5, 30_000],
    ['cap exactly at the delay', 2, { ...noJitter, maxBackoffMs: 25 * S }, 0.5, 25_000],
    ['factor 1 is constant', 7, { ...noJitter, factor: 1 }, 0.5, 5_000],
    ['factor 2', 4, { ...noJitter, backoffMs: 500, factor: 2 }, 0.5, 4_000],
    ['zero backoff', 3, { ...noJitter, backoffMs: 0 }, 0.5, 0],
    ['zero backoff after factor^(k-1) overflows: 0, never NaN', 1000, { ...defaults, backoffMs: 0 }, 1, 0],
    ['factor^(k-1) overflowing is the cap', 1000, noJitter, 0.5, H],
    ['jitter 0.1, random 0 → −10%', 1, defaults, 0, 4_500],
    ['jitter 0.1, random 1 → +10%', 1, defaults, 1, 5_500],
    ['jitter 0.1, random 0, retry 2', 2, defaults, 0, 22_500],
    ['jitter 0.1, random 1, retry 3', 3, defaults, 1, 137_500],
    ['jitter applies after the cap (random 1)', 10, defaults, 1, 3_960_000],
    ['jitter applies after the cap (random 0)', 10, defaults, 0, 3_240_000],
    ['jitter 0.5, random 0', 1, { ...defaults, jitter: 0.5 }, 0, 2_500],
    ['jitter 0.5, random 1', 1, { ...defaults, jitter: 0.5 }, 1, 7_500],
    ['jitter 1, random 0 → 0, never negative', 1, { ...defaults, jitter: 1 }, 0, 0],
    ['jitter 1, random 1 → double', 1, { ...defaults, jitter: 1 }, 1, 10_000],
    ['jitter 0 ignores random 0', 2, noJitter, 0, 25_000],
    ['jitter 0 ignores random 1', 2, noJitter, 1, 25_000],
    ['rounded to whole ms', 1, { ...noJitter, backoffMs: 333, factor: 1.5 }, 0.5, 333],
    ['rounded to whole ms, retry 2', 2, { ...noJitter, backoffMs: 333, factor: 1.5 }, 0.5, 500],
  ];

  for (const [name, k, policy, r, expected] of cases) {
    it(`${name}: k=${k}, random()=${r} → ${expected} ms`, () => {
      expect(backoffDelay(k, policy, pinned(r))).toBe(expected);
    });
  }

  it('k = 0 (or below) is treated like the first retry', () => {
    expect(backoffDelay(0, noJitter, pinned(0.5))).toBe(5_000);
    expect(backoffDelay(-3, noJitter, pinned(0.5))).toBe(5_000);
  });

  it('stays within ±jitter of the capped delay for any random() in [0, 1)', () => {
    let seed = 12345;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let k = 1; k <= 8; k++) {
      const base = Math.min(5_000 * 5 ** (k - 1), H);
      for (let i = 0; i < 200; i++) {
        const d = backoffDelay(k, defaults, rnd);
        expect(d).toBeGreaterThanOrEqual(Math.floor(base * 0.9));
        expect(d).toBeLessThanOrEqual(Math.ceil(base * 1.1));
        expect(Number.isInteger(d)).toBe(true);
      }
    }
  });

  it('uses Math.random by default, within bounds', () => {
    for (let i = 0; i < 100; i++) {
      const d = backoffDelay(1, defaults);
      expect(d).toBeGreaterThanOrEqual(4_500);
      expect(d).toBeLessThanOrEqual(5_500);
    }
  });
});
