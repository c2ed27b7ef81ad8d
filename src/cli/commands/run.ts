import { Coordinator, type StopReason } from '../../coordinator/coordinator.js';
import { WorkerPool } from '../../coordinator/pool.js';
import { recoverStale } from '../../coordinator/recovery.js';
import { definitionOf, describeHandler, settingsOf, type JobDefinition, type JobSettings } from '../../job/job-definition.js';
import { planRun, type PlanOptions, type RunPlan } from '../../job/plan-run.js';
import type { RawRunFlags } from '../../job/run-options.js';
import { budgetOf, handlersOf, policyFor } from '../../job/stages.js';
import type { RetryRules } from '../../coordinator/settlement.js';
import { resolveCountOrShare } from '../../job/units.js';
import { nonEmpty } from '../../split/split-source.js';
import { describeStore, logRoot, openExistingStore, openStore, resolveDbPath } from '../../store/open-store.js';
import { peekBatch } from '../../store/peek-batch.js';
import type { BatchRecord, Counts, TaskStore } from '../../store/task-store.js';
import { StoreError, UsageError } from '../../errors.js';
import { EXIT } from '../exit-codes.js';
import { printable } from '../format.js';
import { colors, type Io } from '../io.js';
import { RunReporter, type ReportMode } from '../run-reporter.js';
import { drainOnSignals, watchSignalsDuringStartup } from '../signals.js';
import { givenDb, suggest } from '../suggest.js';
import { printPlan } from './dry-run.js';

export type RunFlags = RawRunFlags;

export const KILL_GRACE_MS = 2000;

export interface RunCommandOptions extends PlanOptions {
  /**
   * Called with the open store once every input is validated and the handler loaded, before
   * the batch is written: `retry-failed --run` resets its tasks here, so a bad flag or a
   * broken handler leaves them as they were.
   */
  beforeWrite?: (store: TaskStore) => Promise<void>;
}

/**
 * `splitdance run <source>`: split the source into the batch (idempotently) and run it to
 * the end. Every flag and job-file field is validated, and the workers have loaded the
 * handler, before the store is written (or even migrated); with --dry-run nothing is written.
 */
export async function runCommand(sourceArg: string | undefined, cliFlags: RunFlags, io: Io, options: RunCommandOptions = {}): Promise<number> {
  const dbPath = resolveDbPath(cliFlags.db, io.cwd, io.env);
  if (cliFlags.dryRun) {
    const store = await openExistingStore(dbPath, { readonly: true });
    try {
      const plan = await planRun(sourceArg, cliFlags, io.cwd, async (name) => store?.findBatch(name), dbPath, options);
      return await printPlan(plan, store, io);
    } finally {
      await store?.close();
    }
  }
  const plan = await planRun(sourceArg, cliFlags, io.cwd, (name) => peekBatch(dbPath, name), dbPath, options);
  const pool = new WorkerPool({
    size: plan.inv.concurrency,
    handlers: handlersOf(plan.settings),
    killGraceMs: KILL_GRACE_MS,
    maxTasksPerWorker: plan.inv.maxTasksPerWorker,
    maxWorkerMemory: plan.inv.maxWorkerMemory,
    idPrefix: `${process.pid}.`,
  });
  const startup = watchSignalsDuringStartup();
  try {
    await pool.start(1); // a broken handler fails here, before the store is touched
  } catch (err) {
    startup.dispose();
    throw err;
  }
  let store: TaskStore | null = null;
  try {
    if (startup.seen()) return interruptedBeforeStart(startup.seen()!, io);
    const unnamed: string[] = [];
    const split = plan.split((path) => unnamed.push(path));
    // An empty new source is exit 2 before the store exists.
    const specs = plan.existing ? split : nonEmpty(split, plan.source, plan.kind);
    store = await openStore(dbPath, { create: true });
    await options.beforeWrite?.(store);
    const job = definitionOf(plan.source, plan.settings) as unknown as Record<string, unknown>;
    const maxAttempts = plan.settings.retries + 1;
    const enqueued = await store.enqueue({ name: plan.batchName, source: plan.source, job, maxAttempts }, specs, {
      rerunChanged: plan.rerunChanged,
    });
    let batch = enqueued.batch;
    // This run's workers loaded the new definition: it runs under the version this makes.
    if (plan.existing && plan.changed.length) batch = { ...batch, job, jobVersion: await store.updateJob(batch.id, job, budgetOf(plan.settings)) };
    // Another run changed the handler since the plan read the batch: this run's workers loaded
    // the old one, so it claims nothing (no version is 0) and follows the stored one at once.
    else if (!sameHandlers(batch.job, job)) batch = { ...batch, jobVersion: 0 };
    if (unnamed.length) {
      const shown = unnamed.slice(0, 5).join(', ') + (unnamed.length > 5 ? `, … (${unnamed.length - 5} more)` : '');
      plan.notes.push(`skipped ${unnamed.length} file${unnamed.length === 1 ? '' : 's'} whose name is not valid UTF-8: ${shown}; rename them to run them`);
    }
    if (enqueued.requeued) plan.notes.push(`re-queued ${enqueued.requeued} succeeded task(s) whose file changed (--rerun-changed)`);
    if (enqueued.changed) plan.notes.push(`${enqueued.changed} succeeded task(s) have changed files since; --rerun-changed runs them again`);
    const history = await store.historySize();
    if (history > plan.inv.historyWarn) {
      plan.notes.push(`the store holds ${history} attempts of history; \`${suggest({ db: givenDb(cliFlags.db, io) }, ['prune', '--older-than', '30d'])}\` removes finished batches`);
    }
    if (plan.sample) plan.notes.push(`sample: ${enqueued.inserted} new task(s) of the source (${describeSample(plan)})`);
    if (startup.seen()) return interruptedBeforeStart(startup.seen()!, io);
    startup.dispose(); // the coordinator's drain handlers take over
    return await drive(store, batch, pool, plan, io, enqueued.inserted);
  } finally {
    startup.dispose();
    await pool.shutdown();
    await store?.close();
  }
}

function interruptedBeforeStart(signal: 'SIGINT' | 'SIGTERM', io: Io): number {
  io.stderr.write(`splitdance: ${signal} before any task started; nothing ran (run again to start)\n`);
  return signal === 'SIGINT' ? EXIT.SIGINT : EXIT.SIGTERM;
}

function describeSample(plan: RunPlan): string {
  const s = plan.sample!;
  return s.kind === 'fraction' ? `${+(s.fraction * 100).toFixed(4)}% by key hash` : `${s.count} by key hash`;
}

/** What driving a batch needs from a plan; `worker` builds it from the batch's stored job. */
export type DrivePlan = Pick<RunPlan, 'flags' | 'settings' | 'inv' | 'dbPath' | 'notes'>;

/**
 * Runs the coordinator on an enqueued batch until it ends; returns the exit code. When
 * another run stores a newer definition of the batch (another --exec, …), the coordinator
 * stops claiming and lets its running attempts finish; this then loads the new handler in a
 * new pool and goes on with it, so no attempt starts under a definition older than the stored one.
 */
export async function drive(store: TaskStore, batch: BatchRecord, pool: WorkerPool, plan: DrivePlan, io: Io, inserted: number): Promise<number> {
  const { flags, inv } = plan;
  const before = await store.counts(batch.id);
  const total = before.total;
  // No more workers than tasks to run: `-j 50` on one task starts one.
  await pool.grow(before.pending + before.retrying + before.running);
  const mode: ReportMode = flags.json ? 'json' : flags.quiet ? 'quiet' : io.tty ? 'tty' : 'plain';
  const reporter = new RunReporter(io, mode, colors(io, flags), () => store.counts(batch.id), inv.progressIntervalMs, flags.db);
  const maxFailures = inv.maxFailures === null ? null : resolveCountOrShare(inv.maxFailures, total);
  const started = Date.now();
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
        maxRuntimeMs: inv.maxRuntimeMs === null ? null : Math.max(0, inv.maxRuntimeMs - (Date.now() - started)),
        logDir: logRoot(plan.dbPath, io.cwd),
        pollMs: 1000,
      },
      reporter,
    );
  let coordinator = coordinatorFor(batch, pool, plan.settings, 0);
  // Tasks a dead coordinator on this host left RUNNING are taken back now, not after their lease.
  const released = await recoverStale(store, batch.id, coordinator.owner);
  reporter.start({ batch: batch.name, source: batch.source, store: describeStore(plan.dbPath), total, inserted, workers: pool.size, notes: plan.notes });
  // The pools started here to follow a newer definition (the caller shuts down its own).
  const followers: WorkerPool[] = [];
  // A signal while following a definition change (the coordinator was already stopping, or
  // none runs) must still end the run with 130/143.
  const signals = watchSignalsDuringStartup();
  // From here on the reporter's progress timer runs: however this ends (a store error thrown by
  // the coordinator or by the last counts), it is stopped, or it alone would keep the process
  // alive after the error boundary printed the error (a hang instead of exit 4).
  try {
    if (released.length) reporter.released(released);
    let stop: StopReason;
    for (;;) {
      const removeSignals = drainOnSignals(coordinator, inv.graceMs, (m) => reporter.note(m));
      try {
        stop = await coordinator.run();
      } finally {
        removeSignals();
      }
      if (stop.kind !== 'definition-changed') break;
      if (signals.seen()) {
        stop = { kind: 'signal', signal: signals.seen()! };
        break;
      }
      const next = await follow(store, batch, plan, (m) => reporter.note(m));
      followers.push(next.pool);
      if (signals.seen()) {
        stop = { kind: 'signal', signal: signals.seen()! };
        break;
      }
      batch = next.batch;
      coordinator = coordinatorFor(batch, next.pool, next.settings, (await store.counts(batch.id)).failed - before.failed);
    }
    const counts = await store.counts(batch.id);
    const { exitCode, reason } = exitFor(stop, counts, suggest({ batch: batch.name, db: givenDb(flags.db, io) }, ['resume']));
    await reporter.finish({ batch: batch.name, exitCode, reason, counts, elapsedMs: Date.now() - started });
    return exitCode;
  } catch (err) {
    reporter.failed(err);
    throw err;
  } finally {
    signals.dispose();
    reporter.close();
    for (const p of followers) await p.shutdown();
  }
}

/**
 * Another run stored a newer definition of the batch, and this run's attempts have finished:
 * load the stored handler in a new pool (a handler that does not load ends the run with exit 2,
 * leaving the tasks PENDING), and say so.
 */
async function follow(store: TaskStore, old: BatchRecord, plan: DrivePlan, note: (m: string) => void): Promise<{ batch: BatchRecord; settings: JobSettings; pool: WorkerPool }> {
  const batch = await store.findBatch(old.name);
  if (batch?.id !== old.id) {
    throw new StoreError(`batch "${old.name}" is no longer in the store (pruned?); this run stops without claiming anything more`);
  }
  const settings = settingsOf(batch.job as unknown as JobDefinition);
  const handler = describeHandler(settings.handler, settings.stages);
  const handlers = handlersOf(settings);
  if (Object.keys(handlers).length === 0) throw new UsageError(`batch ${printable(batch.name)}: another run stored a definition with no handler; this run stops`);
  const pool = new WorkerPool({
    size: plan.inv.concurrency,
    handlers,
    killGraceMs: KILL_GRACE_MS,
    maxTasksPerWorker: plan.inv.maxTasksPerWorker,
    maxWorkerMemory: plan.inv.maxWorkerMemory,
    idPrefix: `${process.pid}.`,
  });
  try {
    await pool.start(1);
  } catch (err) {
    throw new UsageError(
      `batch ${printable(batch.name)}: another run changed the handler to ${printable(handler)}, which does not load here: ${printable((err as Error).message)}; this run stops, the unfinished tasks stay PENDING`,
    );
  }
  const c = await store.counts(batch.id);
  await pool.grow(c.pending + c.retrying + c.running);
  const what = sameHandlers(old.job, batch.job) ? 'job definition changed' : `handler changed to ${printable(handler)}`;
  note(`batch ${printable(batch.name)}: ${what} by another run; following it`);
  return { batch, settings, pool };
}

function sameHandlers(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const of = (job: Record<string, unknown>) => JSON.stringify(handlersOf(settingsOf(job as unknown as JobDefinition)));
  return of(a) === of(b);
}

/** Each stage's retry rules, worked out once. */
export function rulesOf(settings: JobSettings): (stage: string) => RetryRules {
  const rules = new Map<string, RetryRules>();
  for (const stage of settings.stages.length ? settings.stages.map((s) => s.name) : ['']) {
    const p = policyFor(settings, stage);
    rules.set(stage, {
      policy: { backoffMs: p.backoffMs, factor: p.backoffFactor, maxBackoffMs: p.maxBackoffMs, jitter: p.jitter },
      permanentCodes: p.permanentCodes,
      timeoutMs: p.timeoutMs,
    });
  }
  return (stage) => rules.get(stage) ?? rules.values().next().value!;
}

function exitFor(stop: StopReason, c: Counts, resume: string): { exitCode: number; reason: string } {
  // A stop that only means "not finished yet" (a pause, --max-runtime, --no-wait) that raced the
  // end of the batch (the last attempts ended after it): the batch is done, and exits as done.
  if ((stop.kind === 'paused' || stop.kind === 'max-runtime' || stop.kind === 'no-wait') && c.pending + c.retrying + c.running === 0) stop = { kind: 'done' };
  switch (stop.kind) {
    case 'signal':
      return stop.signal === 'SIGINT'
        ? { exitCode: EXIT.SIGINT, reason: 'interrupted (SIGINT); run again to resume' }
        : { exitCode: EXIT.SIGTERM, reason: 'terminated (SIGTERM); run again to resume' };
    case 'max-runtime':
      return { exitCode: EXIT.INCOMPLETE, reason: '--max-runtime reached; run again to resume' };
    case 'paused':
      return { exitCode: EXIT.INCOMPLETE, reason: `paused (\`${resume}\` to continue)` };
    case 'no-wait':
      return { exitCode: EXIT.INCOMPLETE, reason: 'incomplete (--no-wait): retries are due later; run again to resume' };
    case 'max-failures':
      return { exitCode: EXIT.FAILED, reason: 'stopped: --max-failures reached' };
    case 'definition-changed': // only ever seen by drive, which follows the new definition
    case 'done':
      return c.failed + c.cancelled > 0 ? { exitCode: EXIT.FAILED, reason: 'finished with failures' } : { exitCode: EXIT.OK, reason: 'done' };
  }
}
