import { plural } from '../printable.js';
import { definitionOf } from '../job/job-definition.js';
import type { RunPlan } from '../job/plan-run.js';
import { budgetOf } from '../job/stages.js';
import type { AdminStore, BatchRecord, TaskSpec } from '../store/task-store.js';
import { sameHandlers } from './batch-pool.js';

export type EnqueuePlan = Pick<RunPlan, 'batchName' | 'source' | 'settings' | 'existing' | 'changed' | 'rerunChanged' | 'notes'>;

/**
 * Writes the plan's batch and tasks (idempotently) and decides which definition version this
 * run's workers serve, which were started with `plan.settings` loaded. `unnamed` fills, as
 * `specs` is read, with the files that cannot be tasks. Adds the notes the enqueue gives to
 * `plan.notes`.
 */
export async function enqueuePlan(store: AdminStore, plan: EnqueuePlan, specs: Iterable<TaskSpec>, unnamed: readonly string[]): Promise<{ batch: BatchRecord; inserted: number }> {
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
  if (enqueued.requeued) plan.notes.push(`re-queued ${plural(enqueued.requeued, 'succeeded task')} whose file changed (--rerun-changed)`);
  if (enqueued.changed) plan.notes.push(`${plural(enqueued.changed, 'succeeded task')} ${enqueued.changed === 1 ? 'has a changed file' : 'have changed files'} since; --rerun-changed runs ${enqueued.changed === 1 ? 'it' : 'them'} again`);
  return { batch, inserted: enqueued.inserted };
}
