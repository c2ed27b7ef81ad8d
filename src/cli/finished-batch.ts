import { UsageError } from '../errors.js';
import { describeHandler, settingsOf, storedDefinition } from '../job/job-definition.js';
import type { RunPlan } from '../job/plan-run.js';
import { plural, printable } from '../printable.js';
import type { QueryStore } from '../store/task-store.js';
import { shellWord } from './suggested-commands.js';

/**
 * SPEC §6, no silent no-ops: a `run` that changes the handler, output or an option of a
 * batch that already finished would store the change, run nothing and print `done`. It is
 * refused instead (exit 2, before anything is written), naming the difference and the ways
 * on. Not refused: a run that has work (new keys, `--rerun-changed` with changed files), and
 * a batch with FAILED tasks — the new definition is kept for them, and the run's summary says
 * that `retry-failed --run` runs them with it (docs/output-and-logs.md).
 *
 * `store` is opened read-only; each key is looked up until the first new one, so the cost
 * (one walk of the source) is paid only on this rare path.
 */
export async function refuseFinishedChange(plan: RunPlan, store: QueryStore): Promise<void> {
  if (!plan.existing || plan.changed.length === 0) return;
  const batch = await store.findBatch(plan.batchName);
  if (!batch) return;
  const k = await store.counts(batch.id);
  if (k.pending + k.retrying + k.running > 0 || k.failed > 0) return;
  // Files changed since their task succeeded, compared here: the store notes them only when a run writes.
  let changedFiles = 0;
  for (const spec of plan.split()) {
    const task = await store.getTask(batch.id, spec.key);
    if (!task) return; // a new key: this run has work
    if (task.status === 'SUCCESS' && spec.fingerprint !== null && task.fingerprint !== null && task.fingerprint !== spec.fingerprint) changedFiles++;
  }
  if (plan.rerunChanged && changedFiles > 0) return;

  const stored = settingsOf(storedDefinition(batch));
  const given = plan.settings;
  const what = plan.changed.map((name) => {
    if (name === 'handler' || name === 'stages') return `handler (${describeHandler(stored.handler, stored.stages)} → ${describeHandler(given.handler, given.stages)})`;
    if (name === 'output') return `output (${stored.output?.template ?? 'none'} → ${given.output?.template ?? 'none'})`;
    return `${name} (${JSON.stringify(stored[name as keyof typeof stored])} → ${JSON.stringify(given[name as keyof typeof given])})`;
  });
  const done = `${k.succeeded} succeeded${k.cancelled ? `, ${k.cancelled} cancelled` : ''}`;
  let ways = `a new batch runs the source with it: --batch ${shellWord(`${plan.batchName}-2`)}`;
  if (given.output || given.stages.some((s) => s.output)) ways += ' --force (the outputs are up to date)';
  if (changedFiles > 0) ways += `; --rerun-changed re-runs the ${plural(changedFiles, 'task')} whose files changed since`;
  throw new UsageError(
    `batch ${printable(plan.batchName)} already finished (${done}); this run changes its ${printable(what.join(', '))} ` +
      `but has no task to run, so nothing was written; ${ways}`,
  );
}
