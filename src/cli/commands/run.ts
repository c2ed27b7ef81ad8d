import { planRun, type PlanOptions, type RunPlan } from '../../job/plan-run.js';
import type { RawRunFlags } from '../../job/run-options.js';
import { isOldSchema, openStore, peekBatch, resolveDbPath, trustedOwners, type TrustedOwners } from '../../store/open-store.js';
import type { TaskStore } from '../../store/task-store.js';
import { startAndDrive } from '../drive-run.js';
import { printPlan } from '../dry-run.js';
import type { Io } from '../io.js';
import { keepWorkingWithoutOutput } from '../lost-output.js';
import { refuseFinishedChange } from '../finished-batch.js';

export type RunFlags = RawRunFlags;

/**
 * `splitdance run <source>`: split the source into the batch (idempotently) and run it to
 * the end. Every flag and job-file field is validated, and the workers have loaded the
 * handler, before the store is written (or even migrated); with --dry-run nothing is written.
 * Flags → plan → start → report → drive.
 */
export async function runCommand(sourceArg: string | undefined, cliFlags: RunFlags, io: Io, options: PlanOptions = {}): Promise<number> {
  const dbPath = resolveDbPath(cliFlags.db, io.cwd, io.env);
  // What a run reads from the store (even --dry-run's plan) is what it would run: the store must be one the user trusts.
  const trust = trustedOwners(cliFlags.trustStoreOwner);
  if (cliFlags.dryRun) {
    const store = await openStore(dbPath, 'existing', { readonly: true, trust });
    try {
      const plan = await planRun(sourceArg, cliFlags, io.cwd, async (name) => store?.findBatch(name), dbPath, options);
      return await printPlan(plan, store, io);
    } finally {
      await store?.close();
    }
  }
  keepWorkingWithoutOutput(); // a closed or full stdout must not end a batch half-run
  const plan = await planRun(sourceArg, cliFlags, io.cwd, (name) => peekBatch(dbPath, name, trust), dbPath, options);
  if (plan.existing && plan.changed.length) await checkNotFinished(plan, dbPath, trust);
  const definitionChanged = plan.existing !== undefined && plan.changed.some((name) => DEFINITION.has(name));
  return startAndDrive(plan, cliFlags, io, { definitionChanged, sayNothingRan: true });
}

/** The settings that decide what a task's attempt does (not how often or how long it is retried). */
const DEFINITION = new Set(['handler', 'stages', 'output']);

/** A changed definition for a batch that already finished is exit 2 before anything is written (finished-batch.ts). */
async function checkNotFinished(plan: RunPlan, dbPath: string, trust: TrustedOwners): Promise<void> {
  let store: TaskStore | null;
  try {
    store = await openStore(dbPath, 'existing', { readonly: true, trust });
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
