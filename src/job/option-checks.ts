/** The bounds and checks of single option values: each flag's text, or job-file field, to a typed value or a UsageError. */
import { availableParallelism } from 'node:os';
import { UsageError } from '../errors.js';
import { linearRegExp } from '../linear-regex.js';
import { formatMs, parseCountOrShare, resolveCountOrShare } from './units.js';

/** Upper bounds: beyond them a value is a typo, and some would overflow a store column. */
export const MAX_RETRIES = 1_000_000;
/** Each retry waits at most this many times longer than the one before: 100 reaches --max-backoff 1h from 5s by the third retry. */
export const MAX_BACKOFF_FACTOR = 100;
export const MAX_CONCURRENCY = 1024;

/** `-j 4` or `-j 50%` (of the CPUs), at least 1 and at most MAX_CONCURRENCY. */
export function parseConcurrency(value: string, option = '-j/--concurrency'): number {
  const cpus = availableParallelism();
  if (!/^\d+%?$/.test(value.trim())) {
    throw new UsageError(`${option} expects a number of workers or a share of the ${cpus} CPUs such as 50%; got "${value}"`);
  }
  const n = parseCountOrShare(value, option);
  const workers = resolveCountOrShare(n, cpus);
  if (workers > MAX_CONCURRENCY) throw new UsageError(`${option} allows at most ${MAX_CONCURRENCY} workers; got "${value}"`);
  return workers;
}

export function parseCodes(value: string): number[] {
  return codesOf(value, '--permanent-codes', '2,64');
}

/** `--busy-codes`: exit codes as --permanent-codes takes them, or `none`. */
export function parseBusyCodes(value: string): number[] {
  return value.trim() === 'none' ? [] : codesOf(value, '--busy-codes', '75 (none: no exit code means busy)');
}

function codesOf(value: string, option: string, example: string): number[] {
  const codes = value.split(',').map((s) => s.trim()).filter(Boolean);
  if (codes.length === 0 || codes.some((c) => !/^\d+$/.test(c) || Number(c) > 255 || Number(c) === 0)) {
    throw new UsageError(`${option} expects exit codes 1-255 separated by commas, e.g. ${example}; got "${value}"`);
  }
  return codes.map(Number);
}

/**
 * A `--permanent-errors` pattern: plain JavaScript regex source, no flags. Validated here so a
 * typo is exit 2 before anything is written; stored as given, compiled once per run (retry-rules.ts).
 */
export function checkRegex(source: string, option: string): string {
  // An empty filter is never "everything" (SPEC §9): here it would make every failure final.
  if (source === '') throw new UsageError(`${option} is empty, which would match every failure; give a pattern such as 'Invalid header'`);
  try {
    new RegExp(source);
  } catch (err) {
    throw new UsageError(`${option} ${JSON.stringify(source)}: ${(err as Error).message}`);
  }
  return source;
}

/**
 * A `--colsep` pattern splits every item, hostile ones included, so it must split in time
 * linear in the item (linear-regex.ts): a pattern that cannot is exit 2, with the reason.
 */
export function checkColsep(source: string, option: string): string {
  // Empty would split every item into its characters: a shell variable left unset, most likely.
  if (source === '') throw new UsageError(`${option} is empty; give the pattern that separates the fields of an item, e.g. ${option} ,`);
  try {
    linearRegExp(source);
  } catch (err) {
    throw new UsageError(`${option} ${JSON.stringify(source)}: ${(err as Error).message}`);
  }
  return source;
}

/**
 * The shortest durations the design honours. A lease is renewed every third of its length and
 * a result waits up to 100 ms for its commit, so a lease under 1 s expires under a live owner
 * (`--lease 30ms` on two hosts ran attempts twice at once); a progress line or a timeout check
 * more often than every 100 ms is a busy loop, not a setting.
 */
export const MIN_DURATION_MS = { lease: 1000, progressInterval: 100, timeout: 100 } as const;

export function atLeast(n: number, min: number, option: string): number {
  if (n < min) throw new UsageError(`${option} must be at least ${formatMs(min)} (shorter cannot be honoured); got ${formatMs(n)}`);
  return n;
}

export function positive(n: number, option: string): number {
  if (n <= 0) throw new UsageError(`${option} must be longer than 0`);
  return n;
}

export function given<T>(value: string | undefined, parse: (v: string) => T): T | undefined {
  return value === undefined ? undefined : parse(value);
}

export function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export function nonEmpty(value: string, flag: string): string {
  if (value.trim() === '') throw new UsageError(`${flag} needs a folder, e.g. ${flag} out`);
  return value;
}
