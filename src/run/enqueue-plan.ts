import { plural, printable } from '../printable.js';
import { definitionOf, storedDefinition } from '../job/job-definition.js';
import type { RunPlan } from '../job/plan-run.js';
import { budgetOf, sameHandlers } from '../job/stages.js';
import type { AdminStore, BatchProgress, BatchRecord, QueryStore, TaskSpec } from '../store/task-store.js';
import { rankSpecs } from '../split/task-order.js';
import { UNNAMED } from '../split/walk-directory.js';
import { renderRateKey } from '../template/rate-key.js';

export type EnqueuePlan = Pick<RunPlan, 'batchName' | 'source' | 'kind' | 'settings' | 'existing' | 'changed' | 'rerunChanged' | 'fileGrew' | 'notes'>;

/**
 * Writes the plan's batch and tasks (idempotently) and decides which definition version this
 * run's workers serve, which were started with `plan.settings` loaded. `skipped` fills, as
 * `specs` is read, with the files that cannot be tasks, and why. Adds the notes the enqueue gives to
 * `plan.notes`.
 */
export async function enqueuePlan(
  store: AdminStore & Pick<BatchProgress, 'findBatch'> & Pick<QueryStore, 'learnedDurations'>,
  plan: EnqueuePlan,
  specs: Iterable<TaskSpec>,
  skipped: readonly { path: string; reason: string }[],
): Promise<{ batch: BatchRecord; inserted: number }> {
  const job = definitionOf(plan.source, plan.settings);
  const maxAttempts = plan.settings.retries + 1;
  // A grown file's new segment is stored before its chunks: a crash between leaves a size whose
  // chunks the next run inserts (the same ones, from the same bytes), never chunks whose segment
  // the batch does not know (the next run would cut that range again, differently).
  const grown = plan.existing && plan.fileGrew ? await store.findBatch(plan.batchName) : undefined;
  if (grown) await store.updateJob(grown.id, job, budgetOf(plan.settings));
  const { order, priority } = plan.settings;
  // Every enqueue ranks every spec, so a rerun with another order re-ranks what waits.
  const learned = order === 'history' ? await store.learnedDurations(plan.source) : undefined;
  const ranked = rankSpecs(specs, { order, priority, seed: plan.batchName, learned });
  const unkeyed = { count: 0, example: '' };
  const keyed = plan.settings.rateKey === null ? ranked : withRateKeys(ranked, plan.settings.rateKey, plan.batchName, unkeyed);
  const enqueued = await store.enqueue({ name: plan.batchName, source: plan.source, job, maxAttempts }, keyed, {
    rerunChanged: plan.rerunChanged,
    countRepeated: plan.kind === 'items',
    itemPayloads: plan.kind === 'items',
    // A new template, or new records put back (--rerun-changed): the keys of what is stored change.
    rekey: plan.changed.includes('rateKey') || (plan.rerunChanged && plan.settings.rateKey !== null),
  });
  let batch = enqueued.batch;
  // This run's workers loaded the new definition: it runs under the version this makes (a grown
  // file's was made before the enqueue, which read the batch after it).
  if (plan.existing && plan.changed.length && !grown) batch = { ...batch, job, jobVersion: await store.updateJob(batch.id, job, budgetOf(plan.settings)) };
  // Another run changed the handler since the plan read the batch: this run's workers loaded
  // the old one, so it claims nothing (no version is 0) and follows the stored one at once.
  else if (!sameHandlers(storedDefinition(batch), job)) batch = { ...batch, jobVersion: 0 };
  const byReason = new Map<string, { path: string }[]>();
  for (const s of skipped) {
    const files = byReason.get(s.reason);
    if (files) files.push(s);
    else byReason.set(s.reason, [s]);
  }
  for (const [reason, files] of byReason) {
    const shown = files.slice(0, 5).map((f) => f.path).join(', ') + (files.length > 5 ? `, … (${files.length - 5} more)` : '');
    const n = `${files.length} file${files.length === 1 ? '' : 's'}`;
    if (reason === UNNAMED) plan.notes.push(`skipped ${n} whose name is not valid UTF-8: ${shown}; rename them to run them`);
    else plan.notes.push(`skipped ${n} (${reason}): ${shown}`);
  }
  // A stored key without a rate (`set --rate none`) limits nothing: nothing to say of it.
  if (unkeyed.count && plan.settings.rate !== null) {
    const n = unkeyed.count;
    plan.notes.push(withKey((key) => `--rate-key: ${plural(n, 'task')} without its value (e.g. ${key}) ${n === 1 ? 'has' : 'share'} the empty key`, unkeyed.example));
  }
  if (enqueued.repeated) {
    plan.notes.push(`${plural(enqueued.repeated, 'item')} of the list repeated one given before: each item is one task, run once`);
  }
  if (plan.kind === 'items') {
    if (enqueued.requeued) plan.notes.push(`re-queued ${plural(enqueued.requeued, 'task')} whose record changed in the list (--rerun-changed)`);
    if (enqueued.changed) plan.notes.push(changedRecordsNote(enqueued.changed, enqueued.changedExample ?? ''));
  } else if (enqueued.requeued) plan.notes.push(`re-queued ${plural(enqueued.requeued, 'succeeded task')} whose file changed (--rerun-changed)`);
  if (enqueued.changed && plan.kind !== 'items') plan.notes.push(`${plural(enqueued.changed, 'succeeded task')} ${enqueued.changed === 1 ? 'has a changed file' : 'have changed files'} since; --rerun-changed runs ${enqueued.changed === 1 ? 'it' : 'them'} again`);
  return { batch, inserted: enqueued.inserted };
}

/**
 * --rate-key: each spec with its rendered key. A task the template cannot be rendered for (a
 * record without the field) gets the key '' (shared by all such), counted in `unkeyed`.
 */
function* withRateKeys(specs: Iterable<TaskSpec>, template: string, batch: string, unkeyed: { count: number; example: string }): Generator<TaskSpec> {
  for (const spec of specs) {
    const rateKey = renderRateKey(template, { key: spec.key, batch, stage: spec.stage ?? '', seq: 0, attempt: 0, payload: spec.payload, inputs: {} });
    if (rateKey === null && unkeyed.count++ === 0) unkeyed.example = spec.key;
    yield { ...spec, rateKey: rateKey ?? '' };
  }
}

/** A note's width: it is one line of a terminal. */
const COLUMNS = 80;

/**
 * One line for the tasks whose record the list changed (they run the stored one until
 * `--rerun-changed`): their count and the first one's key, shortened to fit 80 columns.
 */
function changedRecordsNote(count: number, example: string): string {
  return withKey((key) => `${plural(count, 'record')} changed in the list (e.g. ${key}); --rerun-changed runs ${count === 1 ? 'it' : 'them'}`, example);
}

/** `line` with the key `example` in it, printable, shortened so the line fits 80 columns. */
function withKey(line: (key: string) => string, example: string): string {
  const key = [...printable(example)];
  const room = COLUMNS - line('').length;
  return line(key.length <= room ? key.join('') : `${key.slice(0, Math.max(room - 1, 1)).join('')}…`);
}
