/** Start, report and drive a run: the reporter its flags ask for, then the batch to its end (run, worker, retry-failed --run). */
import type { RunPlan } from '../job/plan-run.js';
import type { RawRunFlags } from '../job/run-options.js';
import type { ShutdownSignal } from '../coordinator/run-types.js';
import type { LearnedWork } from '../store/task-store.js';
import { runBatch } from '../run/run-batch.js';
import { signalOutcome } from '../run/run-outcome.js';
import { installSignals, type CommandSignals } from '../run/signals.js';
import { startRun, type PlannedStart, type RunPlace, type StartedRun } from '../run/start-run.js';
import type { Io } from './io.js';
import { RunReporter } from './run-reporter.js';
import { givenDb, commandLineFor } from './suggested-commands.js';
import { trustedOwners } from '../store/open-store.js';

/**
 * Starts a planned batch (start-run.ts: the workers load the handler before the store is
 * written) and drives it to its end; a signal before any task started ends it with nothing run.
 * The command's signals are installed once, for all of it, and removed when it ends.
 */
export async function startAndDrive(
  plan: RunPlan,
  flags: RawRunFlags,
  io: Io,
  options: { beforeWrite?: PlannedStart['beforeWrite']; definitionChanged?: boolean; sayNothingRan?: boolean } = {},
): Promise<number> {
  const db = givenDb(flags.db, io);
  const signals = installSignals();
  try {
    const start = await startRun(
      {
        kind: 'planned',
        plan,
        beforeWrite: options.beforeWrite,
        historyNote: (n) => `the store holds ${n} attempts of history; \`${commandLineFor({ db }, ['prune', '--older-than', '30d'])}\` removes finished batches`,
      },
      runPlace(plan.dbPath, flags, io),
      signals.signal,
    );
    if ('signal' in start) return interruptedBeforeStart(start.signal, io);
    return await driveRun(start.started, flags, io, signals, { definitionChanged: options.definitionChanged, sayNothingRan: options.sayNothingRan });
  } finally {
    signals.dispose();
  }
}

/** Drives `started` to its end with a reporter for `flags`; returns the exit code. Its pool (and a store the start opened) are closed however it ends. */
export async function driveRun(
  started: StartedRun,
  flags: Pick<RawRunFlags, 'json' | 'quiet' | 'color' | 'db'>,
  io: Io,
  signals: CommandSignals,
  options: { definitionChanged?: boolean; sayNothingRan?: boolean } = {},
): Promise<number> {
  try {
    const { store, batch, pool, run } = started;
    // The learned durations (--order history) are one pass over the batch's index: read every 5 s at most.
    const history = run.settings.order === 'history';
    let work: { at: number; work: LearnedWork } | null = null;
    const learned = async () => {
      if (!work || Date.now() - work.at >= 5_000) work = { at: Date.now(), work: await store.learnedWork(batch.id) };
      return work.work;
    };
    const counts = async () => ({ ...(await store.counts(batch.id)), ...(history ? { work: await learned() } : {}) });
    const reporter = RunReporter.forFlags(io, flags, run.inv.progressIntervalMs, counts);
    reporter.tag = run.inv.print?.tag ?? false;
    reporter.definitionChanged = options.definitionChanged ?? false;
    if (options.sayNothingRan) reporter.nothingRan = { outputs: run.settings.output !== null || run.settings.stages.some((s) => s.output !== undefined) };
    return await runBatch(store, batch, pool, run, reporter, signals);
  } finally {
    await started.close();
  }
}

/** Where a run's store is, and how a person resumes its batch once paused (with the --db they gave). */
export function runPlace(dbPath: string, flags: Pick<RawRunFlags, 'db' | 'trustStoreOwner'>, io: Io): RunPlace {
  return { dbPath, trust: trustedOwners(flags.trustStoreOwner), cwd: io.cwd, resume: (batch) => commandLineFor({ batch, db: givenDb(flags.db, io) }, ['resume']) };
}

/** A signal came while the run started: nothing ran. */
function interruptedBeforeStart(signal: ShutdownSignal, io: Io): number {
  io.stderr.write(`splitdance: ${signal} before any task started; nothing ran (run again to start)\n`);
  return signalOutcome(signal).exitCode;
}
