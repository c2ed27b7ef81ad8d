import { describe, expect, it } from 'vitest';
import {
  formatMs,
  MAX_DURATION_MS,
  MAX_DURATION_TEXT,
  parseCount,
  parseCountOrShare,
  parseDuration,
  parseFraction,
  parseNumber,
  parseSize,
  resolveCountOrShare,
} from '../../src/job/units.js';

/** `N` or `P%` of `whole`, as -j and --max-failures resolve it. */
const parseCountOrPercent = (value: string, option: string, whole: number) => resolveCountOrShare(parseCountOrShare(value, option), whole);

/** Asserts `fn` throws a UsageError (classified by name) whose message names the option and the value. */
function expectUsageError(fn: () => unknown, option: string, value: string): void {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught, `expected a UsageError for ${JSON.stringify(value)}`).toBeInstanceOf(Error);
  const err = caught as Error;
  expect(err.name).toBe('UsageError');
  expect(err.message).toContain(option);
  expect(err.message).toContain(`"${value}"`);
}

describe('parseDuration', () => {
  const ok: [string, number][] = [
    ['500ms', 500],
    ['5s', 5_000],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['0s', 0],
    ['1.5s', 1_500],
    ['90s', 90_000],
    ['10 s', 10_000],
    [' 5s ', 5_000],
    ['2h', 7_200_000],
    ['250ms', 250],
  ];
  for (const [text, expected] of ok) {
    it(`accepts ${JSON.stringify(text)} → ${expected} ms`, () => {
      expect(parseDuration(text, '--timeout')).toBe(expected);
    });
  }

  const bad = ['5', '0', '1000', '', '   ', 'abc', 's', 'ms', '5x', '5 parsecs', '-5s', '5s5', '1h30m', 'five seconds', 'NaN', 'Infinity', '1e3s', '5s;rm', '.5s'];
  for (const text of bad) {
    it(`rejects ${JSON.stringify(text)} with a UsageError`, () => {
      expectUsageError(() => parseDuration(text, '--timeout'), '--timeout', text);
    });
  }

  // SPEC §5: every duration works up to at least 365 days, or is refused above a documented maximum.
  const DAY = 86_400_000;
  const long: [string, number][] = [
    ['25d', 25 * DAY],
    ['365d', 365 * DAY],
    ['1y', 365.25 * DAY],
    ['366d', 366 * DAY],
    ['52w', 364 * DAY],
  ];
  for (const [text, expected] of long) {
    it(`accepts ${JSON.stringify(text)} (up to the ${MAX_DURATION_TEXT} maximum)`, () => {
      expect(parseDuration(text, '--timeout')).toBe(expected);
      expect(expected).toBeLessThanOrEqual(MAX_DURATION_MS);
    });
  }
  for (const text of ['366.5d', '367d', '400d', '2y', '53w', '10000000h']) {
    it(`refuses ${JSON.stringify(text)}, above the maximum, naming the option, the maximum and the value`, () => {
      expectUsageError(() => parseDuration(text, '--max-runtime'), '--max-runtime', text);
      expect(() => parseDuration(text, '--max-runtime')).toThrow(`at most ${MAX_DURATION_TEXT}`);
    });
  }
});

describe('parseSize', () => {
  const KiB = 1024;
  const MiB = 1024 * KiB;
  const GiB = 1024 * MiB;
  const ok: [string, number][] = [
    ['64MiB', 64 * MiB],
    ['64MB', 64 * MiB],
    ['64mb', 64 * MiB],
    ['64M', 64 * MiB],
    ['512KiB', 512 * KiB],
    ['512KB', 512 * KiB],
    ['512k', 512 * KiB],
    ['1048576', 1_048_576],
    ['1', 1],
    ['1GiB', GiB],
    ['2GB', 2 * GiB],
    ['1.5MiB', 1.5 * MiB],
    ['100B', 100],
    [' 8KiB ', 8 * KiB],
    ['64 MiB', 64 * MiB],
  ];
  for (const [text, expected] of ok) {
    it(`accepts ${JSON.stringify(text)} → ${expected} bytes`, () => {
      expect(parseSize(text, '--chunk-size')).toBe(expected);
    });
  }

  const bad = ['', 'abc', 'MiB', '0', '0MiB', '-1', '-64MiB', 'NaN', 'Infinity'];
  for (const text of bad) {
    it(`rejects ${JSON.stringify(text)} with a UsageError`, () => {
      expectUsageError(() => parseSize(text, '--chunk-size'), '--chunk-size', text);
    });
  }

  // SUSPECTED BUG: anything after a leading number that is not a known unit falls through to
  // bytes.parse, which then parseInt()s the text: "64XB" is accepted as 64 bytes (a typo turns a
  // 64 MiB chunk size into 64-byte chunks) instead of being refused.
  const trailingGarbage = ['64XB', '64 parsecs', '1e6x', '64MiB;rm', '64MiBs'];
  for (const text of trailingGarbage) {
    it(`rejects ${JSON.stringify(text)} (unknown unit) with a UsageError`, () => {
      expectUsageError(() => parseSize(text, '--chunk-size'), '--chunk-size', text);
    });
  }
});

describe('parseCount', () => {
  it('accepts whole numbers', () => {
    expect(parseCount('0', '--retries')).toBe(0);
    expect(parseCount('3', '--retries')).toBe(3);
    expect(parseCount('1000000', '--retries')).toBe(1_000_000);
    expect(parseCount(' 7 ', '--retries')).toBe(7);
  });

  it('honours min', () => {
    expect(parseCount('1', '--max-tasks-per-worker', { min: 1 })).toBe(1);
    expectUsageError(() => parseCount('0', '--max-tasks-per-worker', { min: 1 }), '--max-tasks-per-worker', '0');
  });

  for (const text of ['', 'abc', '-1', '1.5', '3x', '1e3', '0x10', 'NaN', '+3']) {
    it(`rejects ${JSON.stringify(text)} with a UsageError`, () => {
      expectUsageError(() => parseCount(text, '--retries'), '--retries', text);
    });
  }
});

describe('parseCountOrPercent', () => {
  const ok: [string, number, number][] = [
    ['4', 8, 4],
    ['16', 8, 16],
    ['50%', 8, 4],
    ['100%', 8, 8],
    ['25%', 6, 2], // 1.5 rounded up
    ['10%', 3, 1], // 0.3 rounded up
    ['1%', 1, 1], // at least 1
    ['0.5%', 1000, 5],
    ['33.3%', 1000, 333],
    [' 50% ', 4, 2],
  ];
  for (const [text, whole, expected] of ok) {
    it(`${JSON.stringify(text)} of ${whole} → ${expected}`, () => {
      expect(parseCountOrPercent(text, '-j', whole)).toBe(expected);
    });
  }

  for (const text of ['0', '0%', '', 'abc', '-50%', '%', '50 %', 'half', '-1', '1.5', '50%%']) {
    it(`rejects ${JSON.stringify(text)} with a UsageError`, () => {
      expectUsageError(() => parseCountOrPercent(text, '-j', 8), '-j', text);
    });
  }
});

describe('parseFraction', () => {
  it('accepts numbers in [0, 1]', () => {
    expect(parseFraction('0', '--jitter')).toBe(0);
    expect(parseFraction('0.1', '--jitter')).toBe(0.1);
    expect(parseFraction('1', '--jitter')).toBe(1);
    expect(parseFraction('.5', '--jitter')).toBe(0.5);
  });
  for (const text of ['', ' ', '-0.1', '1.01', '2', 'abc', '10%', 'NaN', 'Infinity']) {
    it(`rejects ${JSON.stringify(text)} with a UsageError`, () => {
      expectUsageError(() => parseFraction(text, '--jitter'), '--jitter', text);
    });
  }
});

describe('parseNumber', () => {
  it('accepts numbers at or above min', () => {
    expect(parseNumber('5', '--backoff-factor')).toBe(5);
    expect(parseNumber('1.5', '--backoff-factor', { min: 1 })).toBe(1.5);
    expect(parseNumber('1', '--backoff-factor', { min: 1 })).toBe(1);
  });
  for (const text of ['', 'abc', '0.5', '-1', 'Infinity', 'NaN']) {
    it(`rejects ${JSON.stringify(text)} (min 1) with a UsageError`, () => {
      expectUsageError(() => parseNumber(text, '--backoff-factor', { min: 1 }), '--backoff-factor', text);
    });
  }
});

describe('formatMs', () => {
  it('formats durations the way they are written', () => {
    expect(formatMs(500)).toBe('500ms');
    expect(formatMs(5_000)).toBe('5s');
    expect(formatMs(120_000)).toBe('2m');
    expect(formatMs(3_600_000)).toBe('1h');
  });

  it('round-trips through parseDuration', () => {
    for (const ms of [500, 5_000, 25_000, 120_000, 3_600_000]) {
      expect(parseDuration(formatMs(ms), '--x')).toBe(ms);
    }
  });
});
