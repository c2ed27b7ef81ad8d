/**
 * Why a worker process could not be started: the machine refused it (EMFILE, EAGAIN, ENOMEM),
 * or its runtime never ran its first line (start-watch.ts). Either is the machine's limit, not
 * the handler's fault, and the message names the limit and the way out. Also the usage error of
 * a handler that never finishes loading.
 */
import { ResourceError, UsageError } from '../errors.js';
import { formatMs } from '../job/units.js';
import { printable } from '../printable.js';
import type { HandlerSpec } from '../worker/protocol.js';

/**
 * How long a forked worker gets to run its first line. Node boots in ~50 ms here, seconds on a
 * machine under load; one that cannot create its threads (a cgroup's pids.max) hangs in its
 * runtime for ever, and is killed after this as a worker that could not be started.
 */
export const BOOT_MS = 15_000;

/** A line of a dying worker's stderr that names a limit of the machine. */
export const LIMIT_SAID = /pthread_create|Resource temporarily unavailable|EAGAIN|EMFILE|too many open files|ENOMEM|Cannot allocate memory/i;
const LIMIT_HINT = "a process, thread or open-file limit (ulimit -u or -n, a cgroup's pids.max) may be reached; lower -j or raise the limit";

/** What an errno from starting a process means, and what to change. */
function refusal(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'EMFILE':
    case 'ENFILE':
      return `too many open files (${err.code}); raise the limit (ulimit -n) or lower -j`;
    case 'EAGAIN':
      return 'the system refused another process (EAGAIN: a process limit such as ulimit -u or a cgroup\'s pids.max); lower -j or raise the limit';
    case 'ENOMEM':
      return 'not enough memory for another process (ENOMEM); lower -j';
    default:
      return err.code ? `${err.code}: ${err.message}` : err.message;
  }
}

/** A worker the machine refused to start (`err` from spawn or fork). */
export function refused(err: NodeJS.ErrnoException): ResourceError {
  return new ResourceError(`could not start a worker process: ${refusal(err)}`);
}

/** A worker whose process started but never ran its first line: it hung (`timedOut`), or died `why`, saying `said`. */
export function neverBooted(timedOut: boolean, why: string, said: string | null): ResourceError {
  const how = timedOut ? `it did not come up within ${BOOT_MS / 1000}s` : `it died as it started (${why})${said ? `: ${said}` : ''}`;
  return new ResourceError(`could not start a worker process: ${how}; ${LIMIT_HINT}`);
}

/** A handler that has not loaded within `loadTimeoutMs`: an import that never settles would hang the start for ever. */
export function notLoaded(handlers: Record<string, HandlerSpec>, loadTimeoutMs: number): UsageError {
  const modules = Object.values(handlers).flatMap((h) => (h.kind === 'module' ? [h.path] : []));
  const named = modules.length ? `handler module ${modules.map((m) => printable(m)).join(', ')}` : 'the handler';
  return new UsageError(
    `${named} did not finish loading within ${formatMs(loadTimeoutMs)} (an import or top-level await that never settles?); fix it, or give --load-timeout more time`,
  );
}
