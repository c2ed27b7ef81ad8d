import type { Coordinator } from '../coordinator/coordinator.js';
import type { ShutdownSignal } from '../coordinator/run-types.js';
import { plural } from '../printable.js';
import { formatMs } from '../job/units.js';
import { longTimeout, type LongTimer } from '../long-timer.js';

/** After the grace, how long an attempt gets between ctx.signal / SIGTERM and SIGKILL. */
const SHUTDOWN_KILL_MS = 1000;

/** The signals a run or worker takes as "shut down": SIGHUP (a closed terminal, an ssh session dropped) like SIGTERM. */
const SHUTDOWN_SIGNALS: readonly ShutdownSignal[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * A command's signals, installed once for the whole command: `signal` aborts at the first one
 * (its reason is the signal's name), and every one, the first included, is passed to the
 * listeners of `each` (a drain's "again: kill at once"). While it is installed Node's default
 * (die at once) is off for those signals; `dispose` puts it back, so a command called in-process
 * leaves nothing behind.
 */
export interface CommandSignals {
  readonly signal: AbortSignal;
  /** The first signal seen, null before. */
  seen(): ShutdownSignal | null;
  /** Calls `listener` at each signal from now on; returns a function removing it. */
  each(listener: (signal: ShutdownSignal) => void): () => void;
  dispose(): void;
}

export function installSignals(names: readonly ShutdownSignal[] = SHUTDOWN_SIGNALS): CommandSignals {
  const controller = new AbortController();
  const listeners = new Set<(signal: ShutdownSignal) => void>();
  const handlers = names.map((name) => {
    const handler = () => {
      if (!controller.signal.aborted) controller.abort(name);
      for (const l of [...listeners]) l(name);
    };
    process.on(name, handler);
    return [name, handler] as const;
  });
  return {
    signal: controller.signal,
    seen: () => signalOf(controller.signal),
    each(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    dispose() {
      listeners.clear();
      for (const [name, handler] of handlers) process.off(name, handler);
    },
  };
}

/** The shutdown signal that aborted a command's `signal` (installSignals aborts with its name), null while it has not. */
export function signalOf(signal: AbortSignal): ShutdownSignal | null {
  const reason: unknown = signal.aborted ? signal.reason : null;
  return SHUTDOWN_SIGNALS.find((s) => s === reason) ?? null;
}

/**
 * Waits `ms`, or less when `signal` aborts first (the timer is then cleared at once, so
 * nothing of the wait keeps the process alive); true when it was aborted.
 */
export function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(true);
  return new Promise((done) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      done(false);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      done(true);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Races `work` with `signal`: its value, or null when the signal aborts first (`work` is left
 * to settle unobserved). The abort listener is removed either way: a `worker --follow` that
 * starts batch after batch adds none for good.
 */
export async function unlessAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T | null> {
  if (signal.aborted) return null;
  let onAbort = () => {};
  const aborted = new Promise<null>((resolve) => {
    onAbort = () => resolve(null);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/**
 * While `coordinator` runs: SIGINT/SIGTERM/SIGHUP stop claiming and let running attempts finish
 * for the grace period, then kill them (their tasks go back to PENDING, uncharged). A second
 * signal kills at once. SIGHUP is a shutdown like SIGTERM: by default it would kill the run
 * without the drain, and the next run would charge its attempts as LOST. Listens to the
 * command's signals (installed once); returns a function that stops listening.
 */
export function drainOnSignals(coordinator: Coordinator, graceMs: number, note: (m: string) => void, signals: CommandSignals): () => void {
  let graceTimer: LongTimer | undefined; // --grace may be up to a year
  const stopListening = signals.each((signal) => {
    if (graceTimer) {
      note(`${signal} again: killing ${plural(coordinator.running, 'running attempt')} now`);
      coordinator.killAll();
      return;
    }
    // Counted before stop() gives the queued ones back: running and queued apart (SPEC §7).
    const queued = coordinator.queued;
    note(`${signal}: no new tasks; waiting up to ${formatMs(graceMs)} for ${plural(coordinator.running, 'running attempt')}`);
    note(`${queued ? `${plural(queued, 'queued attempt')} ${queued === 1 ? 'goes' : 'go'} back unstarted; ` : ''}send ${signal} again to stop at once`);
    coordinator.stop({ kind: 'signal', signal });
    graceTimer = longTimeout(() => {
      if (coordinator.running) note(`grace period over: stopping ${plural(coordinator.running, 'running attempt')} (ctx.signal / SIGTERM, then SIGKILL)`);
      coordinator.interruptAll(SHUTDOWN_KILL_MS);
    }, graceMs);
  });
  return () => {
    graceTimer?.cancel();
    stopListening();
  };
}
