import { startPool } from '../../run/batch-pool.js';
import { enqueuePlan } from '../../run/enqueue-plan.js';
import type { WorkerPool } from '../../pool/pool.js';
import { runBatch } from '../../run/run-batch.js';
import { signalOutcome } from '../../run/run-outcome.js';
import { watchSignalsDuringStartup } from '../../run/signals.js';
import { planRun, type PlanOptions, type RunPlan } from '../../job/plan-run.js';
import type { RawRunFlags } from '../../job/run-options.js';
import { handlersOf } from '../../job/stages.js';
import { nonEmpty } from '../../split/split-source.js';
import { isOldSchema, openExistingStore, openStore, peekBatch, resolveDbPath } from '../../store/open-store.js';
import type { TaskStore } from '../../store/task-store.js';
import type { Io } from '../io.js';
import { keepWorkingWithoutOutput } from '../lost-output.js';
import { refuseFinishedChange } from '../finished-batch.js';
import { RunReporter } from '../run-reporter.js';
import { givenDb, suggest } from '../suggest.js';
import { printPlan } from './dry-run.js';

export type RunFlags = RawRunFlags;

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
  keepWorkingWithoutOutput(); // a closed or full stdout must not end a batch half-run
  const plan = await planRun(sourceArg, cliFlags, io.cwd, (name) => peekBatch(dbPath, name), dbPath, options);
  if (plan.existing && plan.changed.length) await checkNotFinished(plan, dbPath);
  const startup = watchSignalsDuringStartup();
  let pool: WorkerPool | null;
  try {
    pool = await startPool(plan.inv, handlersOf(plan.settings), startup.signalled); // a broken handler fails here, before the store is touched
  } catch (err) {
    startup.dispose();
    throw err;
  }
  if (!pool) {
    startup.dispose();
    return interruptedBeforeStart(startup.seen()!, io);
  }
  let store: TaskStore | null = null;
  try {
    if (startup.seen()) return interruptedBeforeStart(startup.seen()!, io);
    const skipped: { path: string; reason: string }[] = [];
    const split = plan.split((path, reason) => skipped.push({ path, reason }));
    // An empty new source is exit 2 before the store exists.
    const specs = plan.existing ? split : nonEmpty(split, plan.source, plan.kind);
    store = await openStore(dbPath, { create: true });
    await options.beforeWrite?.(store);
    const { batch, inserted } = await enqueuePlan(store, plan, specs, skipped);
    const history = await store.historySize();
    if (history > plan.inv.historyWarn) {
      plan.notes.push(`the store holds ${history} attempts of history; \`${suggest({ db: givenDb(cliFlags.db, io) }, ['prune', '--older-than', '30d'])}\` removes finished batches`);
    }
    if (plan.sample) plan.notes.push(`sample: ${inserted} new task(s) of the source (${describeSample(plan)})`);
    if (startup.seen()) return interruptedBeforeStart(startup.seen()!, io);
    startup.dispose(); // the coordinator's drain handlers take over
    const open = store;
    const reporter = RunReporter.forFlags(io, cliFlags, plan.inv.progressIntervalMs, () => open.counts(batch.id));
    reporter.tag = plan.inv.print?.tag ?? false;
    reporter.definitionChanged = plan.existing !== undefined && plan.changed.some((name) => DEFINITION.has(name));
    const resume = suggest({ batch: batch.name, db: givenDb(cliFlags.db, io) }, ['resume']);
    return await runBatch(store, batch, pool, { settings: plan.settings, inv: plan.inv, dbPath, cwd: io.cwd, notes: plan.notes, inserted, resume }, reporter);
  } finally {
    startup.dispose();
    await pool.shutdown();
    await store?.close();
  }
}

/** The settings that decide what a task's attempt does (not how often or how long it is retried). */
const DEFINITION = new Set(['handler', 'stages', 'output']);

/** A changed definition for a batch that already finished is exit 2 before anything is written (finished-batch.ts). */
async function checkNotFinished(plan: RunPlan, dbPath: string): Promise<void> {
  let store: TaskStore | null;
  try {
    store = await openExistingStore(dbPath, { readonly: true });
  } catch (err) {
    if (isOldSchema(err)) return; // upgraded by this run's open; nothing to compare yet
    throw err;
  }
  if (!store) return;
  try {
    await refuseFinishedChange(plan, store);
  } finally {
    await store.close();
  }
}

function interruptedBeforeStart(signal: 'SIGINT' | 'SIGTERM', io: Io): number {
  io.stderr.write(`splitdance: ${signal} before any task started; nothing ran (run again to start)\n`);
  return signalOutcome(signal).exitCode;
}

function describeSample(plan: RunPlan): string {
  const s = plan.sample!;
  return s.kind === 'fraction' ? `${+(s.fraction * 100).toFixed(4)}% by key hash` : `${s.count} by key hash`;
}
