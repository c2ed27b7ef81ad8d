import { inputFromFlags, invocationOf, type RawRunFlags } from '../../job/run-options.js';
import { serveBatches } from '../../run/serve-batches.js';
import { installSignals } from '../../run/signals.js';
import { resolveDbPath } from '../../store/open-store.js';
import { line, type Io } from '../io.js';
import { keepWorkingWithoutOutput } from '../lost-output.js';
import { resolveBatch } from '../resolve-batch.js';
import { driveRun, runPlace } from '../drive-run.js';

export interface WorkerFlags extends RawRunFlags {
  follow?: boolean;
}

/**
 * `splitdance worker`: join the batches already in the store (no splitting) and work on
 * them with each batch's stored handler and policy, one batch at a time, until none has
 * work left; `--follow` keeps polling for new batches. Many workers, on many machines
 * with a PostgreSQL store, cooperate like overlapping `run`s. `--batch B` waits for B to
 * appear, so workers can be started beside (or before) the `run` that creates it.
 * Flags → serve (run/serve-batches.ts) → each batch driven with a reporter.
 */
export async function workerCommand(flags: WorkerFlags, io: Io): Promise<number> {
  const inv = invocationOf(inputFromFlags(flags, io.cwd)); // every flag validated before the store is opened
  keepWorkingWithoutOutput(); // a closed or full stdout must not end the work half-done
  const dbPath = resolveDbPath(flags.db, io.cwd, io.env);
  // A signal between batches (or while workers start) ends the command with 130/143, not
  // mid-step; while a batch runs, its coordinator drains as `run` does.
  const signals = installSignals();
  try {
    return await serveBatches({
      batch: flags.batch,
      follow: flags.follow === true,
      inv,
      place: runPlace(dbPath, flags, io),
      signals,
      say: (m) => {
        if (!flags.quiet) line(io.stderr, m);
      },
      warn: (m) => line(io.stderr, m),
      resolve: (store, name) => resolveBatch(store, name),
      drive: (started) => driveRun(started, flags, io, signals),
    });
  } finally {
    signals.dispose();
  }
}
