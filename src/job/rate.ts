/**
 * `--rate N/s|N/m|N/h` (SPEC §10): at most N attempt starts per period for a batch, across every
 * run and worker on its store. The store keeps one gate per batch (takeStarts): each start
 * moves the gate on by period / N, so starts are spaced evenly, with at most a tenth of a
 * second's worth at once.
 */
import { UsageError } from '../errors.js';

export interface Rate {
  /** Starts per period. */
  n: number;
  periodMs: number;
}

const PERIODS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000 };

/** `20/s`, `300/m`, `1000/h` (a whole or decimal count above 0), or `none` where `none` is allowed (set --rate none). */
export function parseRate(value: string, option: string): Rate {
  const m = /^\s*(\d+(?:\.\d+)?)\s*\/\s*(s|m|h)\s*$/.exec(value);
  const n = m ? Number(m[1]) : 0;
  if (!m || !(n > 0) || n > 1_000_000) {
    throw new UsageError(`${option} expects starts per period, N/s, N/m or N/h with N above 0 (at most 1000000), e.g. 20/s; got "${value}"`);
  }
  return { n, periodMs: PERIODS[m[2]!]! };
}

/** `20/s` */
export function describeRate(rate: Rate): string {
  const unit = Object.entries(PERIODS).find(([, ms]) => ms === rate.periodMs)?.[0] ?? `${rate.periodMs}ms`;
  return `${rate.n}/${unit}`;
}

/** The time between two starts, and how many may start at once (a tenth of a second's worth, at least one). */
export function spacingOf(rate: Rate): { spacingMs: number; burst: number } {
  const spacingMs = rate.periodMs / rate.n;
  return { spacingMs, burst: Math.max(1, Math.floor(100 / spacingMs)) };
}
