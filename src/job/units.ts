import bytes from 'bytes';
import ms from 'ms';
import { UsageError } from '../errors.js';

/**
 * The longest duration any option takes: 366 days. SPEC promises every duration works up to
 * at least 365 days; 366 lets `1y` (365.25 days to `ms`) and a leap year through. Above it a
 * value is far likelier a typo (`400d` for `40d`) than a plan, and refusing it keeps every
 * deadline (now + a 366-day backoff with 100% jitter) well inside Date and both stores.
 * Timers for durations this long are chained (see long-timer.ts).
 */
export const MAX_DURATION_MS = 366 * 24 * 60 * 60 * 1000;
export const MAX_DURATION_TEXT = '366d';
/** An age (`prune --older-than`) is compared with dates, never put in a timer: it may be longer. */
export const MAX_AGE = { max: 100 * 365.25 * 24 * 60 * 60 * 1000, maxText: '100y' };

/** `500ms`, `5s`, `2m`, `1h`, `1d` → milliseconds. A bare number is refused: its unit would be a guess. */
export function parseDuration(value: string, option: string, { max = MAX_DURATION_MS, maxText = MAX_DURATION_TEXT } = {}): number {
  const text = value.trim();
  const parsed = /^\d+(\.\d+)?\s*[a-z]+$/i.test(text) ? ms(text as ms.StringValue) : undefined;
  if (typeof parsed !== 'number' || !Number.isFinite(parsed) || parsed < 0) {
    throw new UsageError(`${option} expects a duration such as 500ms, 5s, 2m or 1h; got "${value}"`);
  }
  if (parsed > max) {
    throw new UsageError(`${option} expects a duration of at most ${maxText}; got "${value}"`);
  }
  return parsed;
}

/** `64MiB`, `64MB`, `512k`, `1048576` → bytes (binary multiples either way, as `bytes` does). */
export function parseSize(value: string, option: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(?:([kmgtp])i?)?b?$/i.exec(value.trim());
  const parsed = m ? (m[2] ? bytes.parse(`${m[1]}${m[2]}b`) : Number(m[1])) : null;
  if (parsed === null || !Number.isFinite(parsed) || parsed < 1) {
    throw new UsageError(`${option} expects a size such as 64MiB, 512KiB or 1048576; got "${value}"`);
  }
  return Math.floor(parsed);
}

export function parseCount(value: string, option: string, { min = 0, max = Number.MAX_SAFE_INTEGER } = {}): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
    const range = max < Number.MAX_SAFE_INTEGER ? ` from ${min} to ${max}` : min > 0 ? ` of at least ${min}` : '';
    throw new UsageError(`${option} expects a whole number${range}; got "${value}"`);
  }
  return n;
}

/** A count, or a share of some whole known later (`5%` of the tasks): parsed now, resolved then. */
export type CountOrShare = { count: number } | { percent: number };

/** `N` (at least 1) or `P%` (above 0, at most 100). */
export function parseCountOrShare(value: string, option: string): CountOrShare {
  const m = /^(\d+(?:\.\d+)?)%$/.exec(value.trim());
  if (m) {
    const percent = Number(m[1]);
    if (!(percent > 0 && percent <= 100)) throw new UsageError(`${option} expects a positive count or a percentage up to 100%; got "${value}"`);
    return { percent };
  }
  if (!/^\d+$/.test(value.trim())) throw new UsageError(`${option} expects a count or a percentage such as 10%; got "${value}"`);
  return { count: parseCount(value, option, { min: 1 }) };
}

/** The number a CountOrShare stands for: a share of `whole`, rounded up, at least 1. */
export function resolveCountOrShare(n: CountOrShare, whole: number): number {
  return 'count' in n ? n.count : Math.max(1, Math.ceil((whole * n.percent) / 100));
}

export function parseFraction(value: string, option: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) {
    throw new UsageError(`${option} expects a fraction between 0 and 1, e.g. 0.1; got "${value}"`);
  }
  return n;
}

export function parseNumber(value: string, option: string, { min = 0, max = Number.MAX_VALUE } = {}): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < min || n > max) {
    const range = max === Number.MAX_VALUE ? `of at least ${min}` : `from ${min} to ${max}`;
    throw new UsageError(`${option} expects a number ${range}; got "${value}"`);
  }
  return n;
}

export function formatMs(msValue: number): string {
  return ms(Math.round(msValue));
}
