/** Report and drive a started run: the reporter its flags ask for, then the batch to its end (run, worker, retry-failed --run). */
import type { RawRunFlags } from '../job/run-options.js';
import { runBatch } from '../run/run-batch.js';
import { signalOutcome } from '../run/run-outcome.js';
import type { StartedRun } from '../run/start-run.js';
import type { Io } from './io.js';
import { RunReporter } from './run-reporter.js';

/** Drives `started` to its end with a reporter for `flags`; returns the exit code. Its pool (and a store the start opened) are closed however it ends. */
export async function driveRun(
  started: StartedRun,
  flags: Pick<RawRunFlags, 'json' | 'quiet' | 'color' | 'db'>,
  io: Io,
  options: { definitionChanged?: boolean } = {},
): Promise<number> {
  try {
    const { store, batch, pool, run } = started;
    const reporter = RunReporter.forFlags(io, flags, run.inv.progressIntervalMs, () => store.counts(batch.id));
    reporter.tag = run.inv.print?.tag ?? false;
    reporter.definitionChanged = options.definitionChanged ?? false;
    return await runBatch(store, batch, pool, run, reporter);
  } finally {
    await started.close();
  }
}

/** A signal came while the run started: nothing ran. */
export function interruptedBeforeStart(signal: 'SIGINT' | 'SIGTERM', io: Io): number {
  io.stderr.write(`splitdance: ${signal} before any task started; nothing ran (run again to start)\n`);
  return signalOutcome(signal).exitCode;
}
