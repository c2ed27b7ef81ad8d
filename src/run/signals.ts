import type { Coordinator } from '../coordinator/coordinator.js';
import type { ShutdownSignal } from '../coordinator/run-types.js';
import { plural } from '../printable.js';
import { formatMs } from '../job/units.js';
import { longTimeout, type LongTimer } from '../long-timer.js';

/** After the grace, how long an attempt gets between ctx.signal / SIGTERM and SIGKILL. */
const SHUTDOWN_KILL_MS = 1000;

/**
 * SIGINT/SIGTERM: stop claiming and let running attempts finish for the grace period,
 * then kill them (their tasks go back to PENDING, uncharged). A second signal kills at
 * once. SIGHUP (a closed terminal, an ssh session dropped) is a shutdown like SIGTERM: by
 * default it would kill the run without the drain, and the next run would charge its
 * attempts as LOST. Returns a function that removes the handlers.
 */
export function drainOnSignals(coordinator: Coordinator, graceMs: number, note: (m: string) => void): () => void {
  let graceTimer: LongTimer | undefined; // --grace may be up to a year
  const onSignal = (signal: ShutdownSignal) => {
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
  };
  const onInt = () => onSignal('SIGINT');
  const onTerm = () => onSignal('SIGTERM');
  const onHup = () => onSignal('SIGHUP');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  process.on('SIGHUP', onHup);
  return () => {
    graceTimer?.cancel();
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    process.off('SIGHUP', onHup);
  };
}

/**
 * Before the coordinator runs (workers starting, the source being split), a signal only
 * marks the run as interrupted; `run` checks between its steps and exits 130/143 with
 * nothing half-done. Returns the signal seen so far and a function removing the handlers.
 */
export function watchSignalsDuringStartup(): { seen(): ShutdownSignal | null; signalled: Promise<void>; dispose(): void } {
  let seen: ShutdownSignal | null = null;
  let wake = () => {};
  const signalled = new Promise<void>((resolve) => (wake = resolve));
  const onInt = () => {
    seen ??= 'SIGINT';
    wake();
  };
  const onTerm = () => {
    seen ??= 'SIGTERM';
    wake();
  };
  const onHup = () => {
    seen ??= 'SIGHUP'; // a shutdown like SIGTERM
    wake();
  };
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  process.on('SIGHUP', onHup);
  return {
    seen: () => seen,
    /** Settles at the first signal: a step that can wait long (workers loading a handler) races it. */
    signalled,
    dispose() {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      process.off('SIGHUP', onHup);
    },
  };
}
