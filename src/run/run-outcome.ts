import { EXIT } from '../exit-codes.js';
import { plural } from '../printable.js';
import type { Counts } from '../store/task-store.js';
import type { ShutdownSignal, StopReason } from '../coordinator/run-types.js';

/** How a run ended: its exit code (SPEC §6) and the reason shown at the end. */
export interface RunOutcome {
  exitCode: number;
  reason: string;
}

/** Output paths a run's end names at most; the rest are counted (`status` lists them). */
const NAMED_OUTPUTS = 5;

/**
 * The outcome of a run that stopped for `stop` with the batch at `c`. `resume` is the command
 * that resumes a paused batch, quoted in the reason. `pendingOutputs`: committed successes'
 * output paths whose rename failed (EXDEV, EACCES, EROFS): a batch with one is not finished
 * (exit 3, "incomplete", as `status` says: its next run places them or says why not), never
 * exit 0; its failures, if any, are for that later run to report.
 */
export function outcomeOf(stop: StopReason, c: Counts, resume: string, pendingOutputs: string[] = []): RunOutcome {
  // A stop that only means "not finished yet" (a pause, --max-runtime, --no-wait) that raced the
  // end of the batch (the last attempts ended after it): the batch is done, and exits as done.
  if ((stop.kind === 'paused' || stop.kind === 'max-runtime' || stop.kind === 'no-wait') && c.pending + c.retrying + c.running + c.queued === 0) stop = { kind: 'done' };
  switch (stop.kind) {
    case 'signal':
      return signalOutcome(stop.signal);
    case 'max-runtime':
      return { exitCode: EXIT.INCOMPLETE, reason: '--max-runtime reached; run again to resume' };
    case 'paused':
      return { exitCode: EXIT.INCOMPLETE, reason: `paused (\`${resume}\` to continue)` };
    case 'no-wait':
      return { exitCode: EXIT.INCOMPLETE, reason: 'incomplete (--no-wait): retries are due later; run again to resume' };
    case 'max-failures':
      return { exitCode: EXIT.FAILED, reason: 'stopped: --max-failures reached' };
    case 'definition-changed': // only ever seen by runBatch, which follows the new definition
    case 'outputs-pending': // the stages that need them wait: the pending outputs are the reason
      return { exitCode: EXIT.INCOMPLETE, reason: pendingOutputs.length ? notInPlace(pendingOutputs) : 'incomplete: run again to resume' };
    case 'done':
      if (pendingOutputs.length) return { exitCode: EXIT.INCOMPLETE, reason: notInPlace(pendingOutputs) };
      // "failures" only when some failed: a batch that was only cancelled says so.
      if (c.failed > 0) return { exitCode: EXIT.FAILED, reason: 'finished with failures' };
      return c.cancelled > 0 ? { exitCode: EXIT.FAILED, reason: 'finished with cancelled tasks' } : { exitCode: EXIT.OK, reason: 'done' };
  }
}

/**
 * A run ended by SIGINT or SIGTERM exits 130 or 143, whenever the signal came. SIGHUP is a
 * shutdown like SIGTERM (SPEC §7) and exits 143 too, but the reason names the signal received.
 */
export function signalOutcome(signal: ShutdownSignal): RunOutcome {
  switch (signal) {
    case 'SIGINT':
      return { exitCode: EXIT.SIGINT, reason: 'interrupted (SIGINT); run again to resume' };
    case 'SIGTERM':
      return { exitCode: EXIT.SIGTERM, reason: 'terminated (SIGTERM); run again to resume' };
    case 'SIGHUP':
      return { exitCode: EXIT.SIGTERM, reason: 'hung up (SIGHUP); run again to resume' };
  }
}

function notInPlace(paths: string[]): string {
  const named = paths.slice(0, NAMED_OUTPUTS).join(', ') + (paths.length > NAMED_OUTPUTS ? ` and ${paths.length - NAMED_OUTPUTS} more` : '');
  return `incomplete: ${plural(paths.length, 'declared output')} not in place (${named}); run again to place ${paths.length === 1 ? 'it' : 'them'}`;
}
