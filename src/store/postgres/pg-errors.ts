import { StoreError, UsageError } from '../../errors.js';
import type { PgTarget } from './pg-target.js';
import { busyTimeoutMs } from '../shared/busy-timeout.js';
import { TEST_HOOKS } from '../../test-hooks.js';

/** Milliseconds a statement waits for another session's row or table lock before exit 4 (`lock_timeout`). */
export const LOCK_TIMEOUT_MS = busyTimeoutMs();

/**
 * Milliseconds a session of this store may sit idle inside a transaction before the server ends
 * it (`idle_in_transaction_session_timeout`). A healthy transaction never pauses between its
 * statements for more than a moment; one that does belongs to a process that was frozen or cut
 * off mid-transaction, and its row locks would stop every other host. Shorter than the lock
 * timeout, so another session waiting for those locks gets them before it would give up; a
 * healthy but starved session that trips it only sees a dropped connection, which a run rides out.
 */
export const IDLE_IN_TRANSACTION_MS = Math.max(1000, Math.round(LOCK_TIMEOUT_MS * 0.6));

/**
 * Milliseconds a statement may go unanswered before its connection counts as lost (the
 * driver's `query_timeout`; SPLITDANCE_QUERY_TIMEOUT_MS overrides it, tests use a short one).
 * A partition that drops packets without closing anything (a half-open connection) is only
 * ever noticed this way: TCP keepalives are not sent while a statement waits for its answer,
 * and retransmissions take the kernel a quarter of an hour to give up. Past it the connection
 * is destroyed and the store is UNAVAILABLE, an outage a run rides out up to its limit.
 */
const givenQueryTimeout = Number(TEST_HOOKS.queryTimeoutMs);
export const QUERY_TIMEOUT_MS = Number.isFinite(givenQueryTimeout) && givenQueryTimeout > 0 ? givenQueryTimeout : 30_000;

/**
 * Milliseconds a new connection may take to be made and logged in (the pool's
 * `connectionTimeoutMillis`). A server that accepts the connection but never answers the login is
 * silent like a half-open connection: bounded the same way, and never longer than 10 s, so the
 * retries of an outage stay on schedule.
 */
export const CONNECT_TIMEOUT_MS = Math.min(10_000, QUERY_TIMEOUT_MS);

/**
 * The bound for the few statements that may rightly run for long: a schema upgrade of a big
 * table, the one INSERT of a million-task enqueue.
 */
export const LONG_QUERY_TIMEOUT_MS = Math.max(QUERY_TIMEOUT_MS, 30 * 60_000);

/** Socket-level failures: the server was never reached, or the connection broke. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'EPIPE', 'ENOENT']);

/** Deadlocks and serialization failures: the whole transaction may simply run again. */
export function isRetryable(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === '40P01' || code === '40001';
}

/**
 * A privilege the role lacks (42501), named with the grant that fits what it was doing, as
 * docs/trust-model.md lays the roles out: an owner that creates and upgrades the tables in its
 * schema, a role that runs the work (reads and writes rows), a role that only reads. `readonly`:
 * the store was opened by a command that only looks.
 */
function permissionDenied(message: string, t: PgTarget, readonly: boolean): StoreError {
  const who = `user "${t.user}"`;
  const grants = 'the grants are in docs/trust-model.md';
  const on = /permission denied for (database|schema|table|sequence|view)\b/i.exec(message)?.[1]?.toLowerCase();
  if (on === 'database') {
    return new StoreError(
      `${who} may not create schema ${t.schema} for a new store at ${t.location} (${message}); create it for the role that owns the store (CREATE SCHEMA ${t.schema} AUTHORIZATION ${t.user}), or grant ${t.user} CREATE on the database; ${grants}`,
    );
  }
  if (on === 'schema') {
    return new StoreError(
      `${who} may not use schema ${t.schema} at ${t.location} as this needs (${message}): every role needs USAGE on it; creating or upgrading the store's tables (a first run, the first run of a newer splitdance) needs the role that owns the schema; ${grants}`,
    );
  }
  if (readonly) {
    return new StoreError(`${who} may not read the store ${t.location} (${message}); grant it USAGE on schema ${t.schema} and SELECT on the store's tables; ${grants}`);
  }
  return new StoreError(
    `${who} may not change the store ${t.location} (${message}): this command writes, which needs SELECT, INSERT, UPDATE and DELETE on the store's tables (the role that runs the work); a read-only role can use status, tasks, show, watch, batches, report and metrics; ${grants}`,
  );
}

/** A failure after which the connection must not go back to the pool. */
export function isBroken(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  if (typeof e.code === 'string') return NETWORK_CODES.has(e.code) || e.code.startsWith('08') || e.code.startsWith('57P') || e.code === '25P03';
  return typeof e.message === 'string' && /Connection terminated|connection timeout|timeout expired|timeout exceeded|Query read timeout|not queryable/i.test(e.message);
}

/**
 * Maps a driver or server error to a StoreError whose message names the server (never the
 * password) and the fix. Anything unknown (a bad statement, a constraint) is a bug and is
 * returned as it is, its message and stack scrubbed of the password.
 */
export function pgStoreError(err: unknown, t: PgTarget, readonly = false): Error {
  if (err instanceof StoreError || err instanceof UsageError) return err;
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  // The driver's own text may echo the connection string or the password: never pass it on raw.
  const message = t.scrub(typeof e.message === 'string' ? e.message : String(err));
  const at = `PostgreSQL at ${t.server}`;
  // These kinds (and 25006 and 57P01-57P03 below) are what a restart, a failover or a network
  // cut look like: UNAVAILABLE, which a run waits out for a while (coordinator/outage.ts) and
  // every other command reports. A connection (or a slot in the pool) waited for in vain: the
  // store has been out of reach since the wait began, CONNECT_TIMEOUT_MS ago.
  if (/connection timeout|timeout expired|timeout exceeded when trying to connect/i.test(message)) {
    return new StoreError(`cannot reach ${at}: ${message}; check --db and that the server is running`, 'UNAVAILABLE', CONNECT_TIMEOUT_MS);
  }
  if (NETWORK_CODES.has(code) || /\bSSL\b/i.test(message)) {
    return new StoreError(`cannot reach ${at}: ${message}; check --db and that the server is running`, 'UNAVAILABLE');
  }
  // The driver's query_timeout: the server (or the network to it) went silent mid-statement.
  if (/Query read timeout/i.test(message)) {
    return new StoreError(`lost the connection to ${at} (no answer for ${QUERY_TIMEOUT_MS} ms); run again once the server is reachable`, 'UNAVAILABLE', QUERY_TIMEOUT_MS);
  }
  // 25P03: the server ended this session for sitting idle in a transaction (this process was
  // frozen or starved mid-transaction); nothing of that transaction was committed.
  if (/Connection terminated|not queryable/i.test(message) || code.startsWith('08') || code === '25P03') {
    return new StoreError(`lost the connection to ${at} (${message}); run again once the server is reachable`, 'UNAVAILABLE');
  }
  switch (code) {
    case '28P01':
    case '28000':
      return new StoreError(`${at} refused the login of user "${t.user}" (${message}); check the user and password in --db`);
    case '3D000':
      return new StoreError(`database "${t.database}" does not exist on ${at}; create it (createdb ${t.database}) or fix --db`);
    case '42501':
      return permissionDenied(message, t, readonly);
    case '55P03':
      return new StoreError(
        `the store ${t.location} stayed locked by another session for ${LOCK_TIMEOUT_MS} ms; retry when it finishes, or look for a stuck session in pg_stat_activity`,
      );
    case '40P01':
    case '40001':
      return new StoreError(`the store ${t.location} kept conflicting with other sessions (${message}); run again`);
    case '42P01':
    case '42703':
      return new StoreError(`the store ${t.location} (schema ${t.schema}) is missing part of its tables (${message}); was it changed outside splitdance?`);
    case '25006':
      // splitdance's own read-only opens never write; this is the server refusing a write. A
      // primary being demoted in a failover refuses writes this way on every open session for a
      // few seconds before it goes (or comes back): an outage like a restart, which a run rides
      // out up to its limit. A standby named by --db stays read-only, and ends a run at the limit.
      return new StoreError(
        `${at} accepts no writes to the store ${t.location} (${message}): a read-only standby, a primary being demoted, or default_transaction_read_only on; point --db at the primary`,
        'UNAVAILABLE',
      );
    case '57014':
      return new StoreError(
        `${at} cancelled a statement on the store ${t.location} (${message}): a statement_timeout set for this user or database, or an administrator; unset it for this role (ALTER ROLE ${t.user} SET statement_timeout = 0) and run again`,
      );
    case '42704':
      return new UsageError(`${at} does not know a setting or object that --db names (${message}); fix the options in the --db URL`);
    case '42939':
      return new UsageError(`schema "${t.schema}" is a name ${at} reserves (${message}); choose another one with ?schema=NAME`);
    case '53100':
      return new StoreError(`the disk of ${at} is full; free space and run again (nothing was half-written)`);
    case '53300':
      return new StoreError(`${at} has no free connection slot (${message}); close other clients or raise max_connections`);
  }
  // 57P01-57P03: shutting down, crashed, starting up (a restart); 57P04 is a dropped database.
  if (code === '57P01' || code === '57P02' || code === '57P03') {
    return new StoreError(`${at} cannot serve the store now (${message}); run again once it is up`, 'UNAVAILABLE');
  }
  if (code.startsWith('57P') || code.startsWith('53')) {
    return new StoreError(`${at} cannot serve the store now (${message}); run again once it is up`);
  }
  if (!(err instanceof Error)) return new Error(message);
  err.message = message;
  if (err.stack) err.stack = t.scrub(err.stack);
  return err;
}
