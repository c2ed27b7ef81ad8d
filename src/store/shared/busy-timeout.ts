import { UsageError } from '../../errors.js';

/** Node's timers and SQLite's busy handler both take a 32-bit signed count of milliseconds. */
const MAX_MS = 2_147_483_647;

/**
 * How long a writer waits for another's lock before the command fails with exit 4 (SQLite's
 * busy timeout, PostgreSQL's lock_timeout): `SPLITDANCE_BUSY_TIMEOUT_MS`, else 5000. Read
 * once; a value that is not a whole number of milliseconds is a usage error, not a NaN timeout.
 */
export function busyTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const given = env.SPLITDANCE_BUSY_TIMEOUT_MS;
  if (given === undefined || given.trim() === '') return 5000;
  const n = Number(given);
  if (!/^\s*\d+\s*$/.test(given) || n > MAX_MS) {
    throw new UsageError(`SPLITDANCE_BUSY_TIMEOUT_MS expects a whole number of milliseconds from 0 to ${MAX_MS}; got "${given}" (unset it for the default, 5000)`);
  }
  return n;
}
