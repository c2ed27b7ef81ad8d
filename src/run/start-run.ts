/** Where a run starts: one start for `run`, `worker` and `retry-failed --run` — the workers load the handlers before the store is written. */
import type { JobSettings } from '../job/job-definition.js';
import type { RunPlan } from '../job/plan-run.js';
import type { Invocation } from '../job/run-options.js';
import type { ShutdownSignal } from '../coordinator/run-types.js';
import { handlersOf } from '../job/stages.js';
import type { WorkerPool } from '../pool/pool.js';
import { nonEmpty } from '../split/split-source.js';
import { openStore, type TrustedOwners } from '../store/open-store.js';
import type { BatchRecord, TaskStore } from '../store/task-store.js';
import { startPool } from './batch-pool.js';
import { signalOf } from './signals.js';
import { enqueuePlan } from './enqueue-plan.js';
import type { BatchRun } from './run-batch.js';

/** Where the store is and how the run names itself to a person. */
export interface RunPlace {
  dbPath: string;
  /** Owners whose SQLite stores are used as the user's own (--trust-store-owner). */
  trust: TrustedOwners;
  /** The command's working directory: a relative store path is resolved there (the logs folder), and the workers run there. */
  cwd: string;
  /** The command that resumes the batch once paused, for that batch. */
  resume(batch: string): string;
}

/** A batch `run` planned from its source (and maybe the job file): split and enqueued once the workers are ready. */
export interface PlannedStart {
  kind: 'planned';
  plan: RunPlan;
  /**
   * Called with the open store once every input is validated and the handler loaded, before
   * the batch is written: `retry-failed --run` resets its tasks here, so a bad flag or a
   * broken handler leaves them as they were.
   */
  beforeWrite?: (store: TaskStore) => Promise<void>;
  /** A note for a store with this much history (the command knows how to say `prune`). */
  historyNote(attempts: number): string;
}

/** A batch already in an open store, run with its stored definition (`worker`). */
export interface StoredStart {
  kind: 'stored';
  store: TaskStore;
  batch: BatchRecord;
  settings: JobSettings;
  inv: Invocation;
}

/** A run ready to be driven (run-batch.ts); `close` shuts its pool down, and closes the store if the start opened it. */
export interface StartedRun {
  store: TaskStore;
  batch: BatchRecord;
  pool: WorkerPool;
  run: BatchRun;
  close(): Promise<void>;
}

/** Started, or a signal came first and nothing ran. */
export type Start = { started: StartedRun } | { signal: ShutdownSignal };

/**
 * Starts a run: a pool whose first worker has loaded the handlers (a handler that does not
 * load throws a UsageError here, before anything is written), then — for a planned batch —
 * the store opened (created, migrated) and the batch enqueued. The command's signal
 * (signals.ts; its reason names the signal) aborting at any step ends the start with nothing
 * half-done. Throws with everything it started shut down.
 */
export async function startRun(what: PlannedStart | StoredStart, place: RunPlace, signal: AbortSignal): Promise<Start> {
  const settings = what.kind === 'planned' ? what.plan.settings : what.settings;
  const inv = what.kind === 'planned' ? what.plan.inv : what.inv;
  const pool = await startPool(inv, handlersOf(settings), place.cwd, signal);
  if (!pool) return { signal: signalOf(signal)! };
  let store: TaskStore | null = null;
  try {
    if (signal.aborted) return await stopped(pool, null, signal);
    const run: BatchRun = { settings, inv, dbPath: place.dbPath, cwd: place.cwd, notes: [], inserted: 0, resume: '', jobFile: what.kind === 'planned' ? what.plan.jobFile : null };
    let batch: BatchRecord;
    if (what.kind === 'stored') {
      batch = what.batch;
    } else {
      const { plan } = what;
      const skipped: { path: string; reason: string }[] = [];
      const split = plan.split((path, reason) => skipped.push({ path, reason }));
      // An empty new source is exit 2 before the store exists.
      const specs = plan.existing ? split : nonEmpty(split, plan.source, plan.kind);
      store = await openStore(place.dbPath, 'create', { trust: place.trust });
      await what.beforeWrite?.(store);
      const enqueued = await enqueuePlan(store, plan, specs, skipped);
      plan.doneReading();
      batch = enqueued.batch;
      run.inserted = enqueued.inserted;
      const history = await store.historySize();
      if (history > plan.inv.historyWarn) plan.notes.push(what.historyNote(history));
      if (plan.sample) plan.notes.push(`sample: ${enqueued.inserted} new task(s) of the source (${describeSample(plan)})`);
      const limit = plan.settings.concurrencyLimit;
      if (limit !== null && limit < plan.inv.concurrency) plan.notes.push(`at most ${limit} running at once: the batch was given \`splitdance set -j ${limit}\` (\`set -j none\` lifts it)`);
      run.notes = plan.notes;
      if (signal.aborted) return await stopped(pool, store, signal);
    }
    run.resume = place.resume(batch.name);
    const owned = store;
    const open = what.kind === 'stored' ? what.store : store!;
    return {
      started: {
        store: open,
        batch,
        pool,
        run,
        async close() {
          await pool.shutdown();
          await owned?.close();
        },
      },
    };
  } catch (err) {
    await pool.shutdown();
    await store?.close();
    throw err;
  }
}

async function stopped(pool: WorkerPool, store: TaskStore | null, signal: AbortSignal): Promise<Start> {
  await pool.shutdown();
  await store?.close();
  return { signal: signalOf(signal)! };
}

function describeSample(plan: RunPlan): string {
  const s = plan.sample!;
  return s.kind === 'fraction' ? `${+(s.fraction * 100).toFixed(4)}% by key hash` : `${s.count} by key hash`;
}
