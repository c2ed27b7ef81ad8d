import { StoreError, UsageError } from '../errors.js';
import { describeHandler, settingsOf, storedDefinition, type JobSettings } from '../job/job-definition.js';
import type { Invocation } from '../job/run-options.js';
import { handlersOf, sameHandlers } from '../job/stages.js';
import { resolveCountOrShare } from '../job/units.js';
import { plural, printable } from '../printable.js';
import { EXIT } from '../exit-codes.js';
import { describeStore, logRoot } from '../store/open-store.js';
import type { BatchRecord, Counts, HookStore, LeaseStore } from '../store/task-store.js';
import { growToWork, KILL_GRACE_MS, startPool } from './batch-pool.js';
import { Coordinator } from '../coordinator/coordinator.js';
import type { RunObserver, RunStore, StopReason } from '../coordinator/run-types.js';
import type { MetricsStore } from '../status/batch-metrics.js';
import { ridingOut } from '../coordinator/outage.js';
import type { WorkerPool } from '../pool/pool.js';
import { recoverStale } from '../coordinator/recovery.js';
import { RenewalWatch } from '../coordinator/renewal-watch.js';
import { AttemptPrinter, type PrintAttempt } from './attempt-printer.js';
import { AttemptResults } from './attempt-results.js';
import { DeclaredOutputs } from '../coordinator/declared-outputs.js';
import { rulesOf } from '../coordinator/retry-rules.js';
import { outcomeOf } from './run-outcome.js';
import { atEnd, runHooks } from './batch-hooks.js';
import { drainOnSignals, type CommandSignals } from './signals.js';
import { monotonicMs } from '../wall-steps.js';

/** Where printed output goes for an observer that does not show it. */
const IGNORED = { write: async () => {}, end: async () => {} };

export interface RunStart {
  batch: string;
  source: string;
  store: string;
  total: number;
  inserted: number;
  workers: number;
  /** The job file the run read, as the user named it; null: none. */
  jobFile: string | null;
  notes: string[];
}

export interface RunSummary {
  batch: string;
  exitCode: number;
  reason: string;
  counts: Counts;
  elapsedMs: number;
  /**
   * A run that ends unfinished (exit 3) names the tasks left waiting for a retry after failing,
   * the first RETRYING_NAMED of them (`counts.retrying` has them all): a nightly `--no-wait`
   * run whose next night is a new batch would otherwise never say which file keeps failing.
   */
  retrying: RetryingTask[];
}

export interface RetryingTask {
  key: string;
  attempts: number;
  lastError: string | null;
  nextRunAt: number;
}

/** Retrying tasks a run's end names at most (like the failures `--quiet` repeats); the rest are counted. */
const RETRYING_NAMED = 100;

/** What a run tells whoever shows it, from its start to its end (the CLI's reporter). */
export interface BatchObserver extends RunObserver {
  start(info: RunStart): void;
  finish(summary: RunSummary): Promise<void>;
  /** `--print`: where one attempt's stdout or stderr is written, chunk by chunk (attempt-printer.ts). */
  printed?: PrintAttempt;
  /** The run ends with an error, which the caller is about to throw. */
  failed(err: unknown): void;
  /** Nothing of the observer may keep the process alive after this. Called however the run ends. */
  close(): void;
}

/** What running a batch needs besides the store, the batch and a started pool. */
export interface BatchRun {
  /** The settings the pool's workers loaded. */
  settings: JobSettings;
  inv: Invocation;
  dbPath: string;
  /** The command's working directory: a relative store path is resolved there (the logs folder), and the workers run there. */
  cwd: string;
  /** Said at the start, before the batch line. */
  notes: string[];
  /** The job file the run's plan read (named on the batch line); null: none. */
  jobFile: string | null;
  /** Tasks this run added to the batch. */
  inserted: number;
  /** The command that resumes the batch once paused, quoted when a pause stops the run. */
  resume: string;
}

/**
 * Runs the coordinator on an enqueued batch until it ends; returns the exit code. When
 * another run stores a newer definition of the batch (another --exec, …), the coordinator
 * stops claiming and lets its running attempts finish; this then loads the new handler in a
 * new pool and goes on with it, so no attempt starts under a definition older than the stored
 * one. The caller shuts down the pool it passed; the pools started here are shut down here.
 * `signals` are the command's (installed once, signals.ts): while a coordinator runs they drain
 * it; one seen before it starts, or while a definition change is followed, ends the run with 130/143.
 */
export async function runBatch(store: RunStore & MetricsStore & HookStore, batch: BatchRecord, pool: WorkerPool, run: BatchRun, observer: BatchObserver, signals: CommandSignals): Promise<number> {
  const { inv } = run;
  // The run's first looks at the store wait out a server restarting as the coordinator's do (a
  // worker may be joining the batch just then): its outcome is the batch's, not exit 4.
  const note = (m: string) => observer.note(m);
  const { counts: before, grown } = await ridingOut(() => growToWork(pool, store, batch.id), note);
  const total = before.total;
  const maxFailures = inv.maxFailures === null ? null : resolveCountOrShare(inv.maxFailures, total);
  const started = monotonicMs();
  // Read before recovery marks anything LOST: from here on the run counts the attempts it ends.
  // Loaded only when asked for: prom-client alone costs ~35 ms of every run's start-up.
  const metrics =
    inv.metricsFile === null ? null : await ridingOut(async () => (await import('./run-metrics.js')).RunMetrics.open(store, batch, inv.metricsFile!, note), note);
  // --results and --print read the same copies of each attempt's output (in DIR with --results).
  const results = inv.results === null ? null : new AttemptResults(inv.results, inv.print !== null, note);
  const printer = inv.print
    ? new AttemptPrinter({ keepOrder: inv.print.keepOrder, lineBuffer: inv.print.lineBuffer }, (task, stream) => observer.printed?.(task, stream) ?? IGNORED, note, results?.copies ?? null)
    : null;
  const tapped = metrics ? metrics.tap(observer) : observer;
  // The results are written before the printer hears of an attempt (it removes the copies once printed).
  const seen = [results, printer].reduce<RunObserver>((o, tap) => (tap ? tap.tap(o) : o), tapped);
  // The limits hold for the whole run, across the definitions it follows.
  const coordinatorFor = (b: BatchRecord, p: WorkerPool, settings: JobSettings, failedSoFar: number) =>
    new Coordinator(
      store,
      b,
      p,
      {
        rules: rulesOf(settings),
        leaseMs: inv.leaseMs,
        graceMs: inv.graceMs,
        killGraceMs: KILL_GRACE_MS,
        noWait: inv.noWait,
        maxFailures: maxFailures === null ? null : Math.max(1, maxFailures - failedSoFar),
        maxRuntimeMs: inv.maxRuntimeMs === null ? null : Math.max(0, inv.maxRuntimeMs - (monotonicMs() - started)),
        logDir: logRoot(run.dbPath, run.cwd),
        pollMs: 1000,
        outputs: new DeclaredOutputs(settings, b.name, inv.force, store.identity),
        printPrefix: results ? (token) => results.prefixOf(token) : printer ? (token) => printer.prefixOf(token) : null,
        rate: settings.rate,
        rateKey: settings.rateKey !== null,
        limit: settings.concurrencyLimit,
        adaptive: settings.adaptive,
        slots: inv.concurrency,
      },
      seen,
    );
  let coordinator = coordinatorFor(batch, pool, run.settings, 0);
  // Tasks a dead coordinator on this host left RUNNING are taken back now, not after their lease.
  // An owner that cannot be proven dead is left to the coordinator's own watch, which takes its
  // tasks once its renewals are seen to stop for a lease (a fresh watch has seen nothing stop).
  const { released } = await ridingOut(
    () => recoverStale(store, batch.id, coordinator.owner, new RenewalWatch(inv.leaseMs), Date.now(), (lost) => coordinator.discardLostOutputs(lost)),
    note,
  );
  observer.start({ batch: batch.name, source: batch.source, store: describeStore(run.dbPath), total, inserted: run.inserted, workers: pool.size, jobFile: run.jobFile, notes: run.notes });
  // Said when the machine refused a worker (a pool's growth settles late); after the verdict
  // line, or an error's, it would only confuse.
  let finished = false;
  const lateNote = (m: string | null) => m && !finished && observer.note(m);
  void grown.then(lateNote);
  // The pools started here to follow a newer definition (the caller shuts down its own).
  const followers: WorkerPool[] = [];
  // From here on the observer's progress timer runs: however this ends (a store error thrown by
  // the coordinator or by the last counts), it is closed, or it alone would keep the process
  // alive after the error boundary printed the error (a hang instead of exit 4).
  try {
    await metrics?.start(inv.progressIntervalMs);
    if (released.length) seen.released(released);
    let stop: StopReason;
    // A signal seen while no coordinator drains (the run starting, or a definition change being
    // followed) ends the run with 130/143, with nothing more claimed.
    const signalled = (): StopReason | null => {
      const signal = signals.seen();
      return signal ? { kind: 'signal', signal } : null;
    };
    for (;;) {
      const early = signalled();
      if (early) {
        stop = early;
        break;
      }
      const removeDrain = drainOnSignals(coordinator, inv.graceMs, note, signals);
      try {
        stop = await coordinator.run();
      } finally {
        removeDrain();
      }
      if (stop.kind !== 'definition-changed') break;
      stop = signalled() ?? stop;
      if (stop.kind === 'signal') break;
      const next = await follow(store, batch, run, note, lateNote);
      followers.push(next.pool);
      stop = signalled() ?? stop;
      if (stop.kind === 'signal') break;
      batch = next.batch;
      const failedNow = (await ridingOut(() => store.counts(batch.id), note)).failed;
      coordinator = coordinatorFor(batch, next.pool, next.settings, failedNow - before.failed);
    }
    // The run is over: a server restarting just now must not turn its outcome into exit 4.
    const counts = await ridingOut(() => store.counts(batch.id), note);
    const pending = await ridingOut(() => store.pendingOutputs(batch.id), note);
    // At its end (not stopped by a signal): the batch's hooks, as its stored definition has them now.
    if (stop.kind !== 'signal' && atEnd(counts) && pending.length === 0) {
      const current = (await ridingOut(() => store.findBatch(batch.name), note)) ?? batch;
      await runHooks(store, current, settingsOf(storedDefinition(current)), note, signals);
      // A signal that stopped a hook ends the run as any signal does (the hook runs again next time).
      stop = signalled() ?? stop;
    }
    let { exitCode, reason } = outcomeOf(stop, counts, run.resume, pending.map((p) => p.out ?? p.temp));
    await metrics?.finish();
    await printer?.finish();
    results?.finish();
    if (printer?.lost && exitCode === EXIT.OK) {
      // Every task succeeded, but the output --print was asked for is not all on stdout.
      exitCode = EXIT.FAILED;
      reason = `done, but --print could not print the output of ${plural(printer.lost, 'attempt')} (said above)`;
    }
    if (results?.lost && exitCode === EXIT.OK) {
      exitCode = EXIT.FAILED;
      reason = `done, but --results could not write the files of ${plural(results.lost, 'task')} (said above)`;
    }
    const retrying =
      exitCode === EXIT.INCOMPLETE && counts.retrying > 0
        ? (await ridingOut(() => store.listTasks({ batchId: batch.id, status: 'PENDING', attemptedOnly: true, limit: RETRYING_NAMED }), note)).map((t) => ({
            key: t.key,
            attempts: t.attempts,
            lastError: t.lastError,
            nextRunAt: t.nextRunAt,
          }))
        : [];
    finished = true;
    await observer.finish({ batch: batch.name, exitCode, reason, counts, elapsedMs: Math.round(monotonicMs() - started), retrying });
    return exitCode;
  } catch (err) {
    observer.failed(err);
    throw err;
  } finally {
    finished = true; // an error's line has been printed, nothing follows it
    await printer?.finish();
    results?.finish();
    metrics?.stop();
    observer.close();
    for (const p of followers) await p.shutdown();
  }
}

/**
 * Another run stored a newer definition of the batch, and this run's attempts have finished:
 * load the stored handler in a new pool (a handler that does not load ends the run with exit 2,
 * leaving the tasks PENDING), and say so.
 */
async function follow(
  store: LeaseStore,
  old: BatchRecord,
  run: Pick<BatchRun, 'inv' | 'cwd'>,
  note: (m: string) => void,
  lateNote: (m: string | null) => void,
): Promise<{ batch: BatchRecord; settings: JobSettings; pool: WorkerPool }> {
  const batch = await ridingOut(() => store.findBatch(old.name), note);
  if (batch?.id !== old.id) {
    throw new StoreError(`batch "${old.name}" is no longer in the store (pruned?); this run stops without claiming anything more`);
  }
  const settings = settingsOf(storedDefinition(batch));
  const handler = describeHandler(settings.handler, settings.stages);
  const handlers = handlersOf(settings);
  if (Object.keys(handlers).length === 0) throw new UsageError(`batch ${printable(batch.name)}: another run stored a definition with no handler; this run stops`);
  let pool: WorkerPool;
  try {
    pool = await startPool(run.inv, handlers, run.cwd);
  } catch (err) {
    throw new UsageError(
      `batch ${printable(batch.name)}: another run changed the handler to ${printable(handler)}, which does not load here: ${printable((err as Error).message)}; this run stops, the unfinished tasks stay PENDING`,
    );
  }
  void (await ridingOut(() => growToWork(pool, store, batch.id), note)).grown.then(lateNote);
  const what = sameHandlers(storedDefinition(old), storedDefinition(batch)) ? 'job definition changed' : `handler changed to ${printable(handler)}`;
  note(`batch ${printable(batch.name)}: ${what} by another run; following it`);
  return { batch, settings, pool };
}
