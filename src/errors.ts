import { cutError, cutText, ERROR_MAX_BYTES } from './stored-text.js';

/**
 * The few error classes of splitdance, each tied to one decision. Errors cross
 * process boundaries as data, so they are classified by `name`, never by
 * `instanceof`.
 */

/** Bad input or usage: exit 2, nothing written. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The store cannot be used (unreadable, locked past timeout, corrupt, newer): exit 4. */
export class StoreError extends Error {
  override name = 'StoreError';

  /**
   * `NO_STORE`: there is no store at that place yet (`run` then creates one).
   * `OLD_SCHEMA`: a read-only open found a schema older than this build (a writable open upgrades it).
   * `UNAVAILABLE`: the server is down, restarting or unreachable for now; a run rides it out (outage.ts).
   */
  constructor(
    message: string,
    readonly code?: 'NO_STORE' | 'OLD_SCHEMA' | 'UNAVAILABLE',
    /** UNAVAILABLE found by waiting: how long the store had already been silent when it was noticed (ms). */
    readonly silentMs = 0,
  ) {
    super(message);
  }
}

/**
 * The machine will not give a run what it needs to start: no process or file descriptor to be
 * had (EMFILE under `ulimit -n`, EAGAIN under a cgroup's `pids.max`): exit 4, like a store
 * that cannot be used, since waiting or another run on the same machine meets the same wall.
 */
export class ResourceError extends Error {
  override name = 'ResourceError';
}

/** Thrown by a handler: fail the task at once, without retries. */
export class PermanentError extends Error {
  override name = 'PermanentError';
  readonly retryable = false;
}

/**
 * Thrown by a handler (or returned for an item by a `batch` export): the service it calls is
 * busy, try again later. The task goes back to wait `delayMs` (else its backoff) without
 * spending an attempt, for at most `--max-busy` in a row (SPEC §10).
 */
export class RetryLater extends Error {
  override name = 'RetryLater';
  /** Milliseconds to wait before the next attempt, or null for the task's backoff. */
  readonly retryAfterMs: number | null;

  constructor(delayMs?: number | null, message = 'busy, try again later') {
    super(message);
    this.retryAfterMs = typeof delayMs === 'number' && Number.isFinite(delayMs) && delayMs >= 0 ? Math.round(delayMs) : null;
  }
}

/** What crosses IPC for an error thrown by a handler. */
export interface SerializedError {
  name: string;
  message: string;
  code?: string;
  retryable: boolean;
  stack?: string;
  /** A RetryLater: busy, with the delay it asked for (null: the backoff). */
  busy?: { retryAfterMs: number | null };
}

export function serializeError(err: unknown): SerializedError {
  if (err instanceof Error) {
    const e = err as Error & { code?: unknown; retryable?: unknown; retryAfterMs?: unknown };
    // By name: a handler may import another copy of the package than the worker's.
    const busy = e.name === 'RetryLater' ? { busy: { retryAfterMs: typeof e.retryAfterMs === 'number' && e.retryAfterMs >= 0 ? e.retryAfterMs : null } } : {};
    return {
      ...busy,
      name: cutText(String(e.name || 'Error'), 256),
      // Cut here, in the worker, so a 10 MB message does not cross IPC whole on every attempt.
      message: cutError(String(e.message)),
      code: typeof e.code === 'string' ? e.code : undefined,
      retryable: e.retryable !== false && e.name !== 'PermanentError',
      stack: e.stack === undefined ? undefined : cutText(e.stack, 4 * ERROR_MAX_BYTES),
    };
  }
  return { name: 'Error', message: cutError(describeThrown(err)), retryable: true };
}

function describeThrown(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return `non-error thrown: ${JSON.stringify(value)}`;
  } catch {
    return `non-error thrown: ${String(value)}`;
  }
}

/** One line for the task's `last_error`: `Name: message` (the name is left out for plain Errors). */
export function errorLine(err: SerializedError): string {
  const prefix = err.code && !err.message.startsWith(err.code) ? `${err.code}: ` : '';
  const name = err.name === 'Error' ? '' : `${err.name}: `;
  return cutError(`${name}${prefix}${err.message}`);
}
