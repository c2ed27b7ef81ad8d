import { settingsOf, storedDefinition } from '../job/job-definition.js';
import { rankSpecs, type Order, type PriorityRule } from '../split/task-order.js';
import type { Rate } from '../job/rate.js';
import type { AdminStore, BatchRecord, QueryStore, Rank, TaskRow } from '../store/task-store.js';

/** What `splitdance set` changes: the claim order of the tasks that wait, and the rate of starts. */
export interface OrderChange {
  order?: Order;
  priority?: PriorityRule[];
  /** --rate, or null for none. */
  rate?: Rate | null;
  /** `-j N`: at most N running on each run and worker, or null for their own -j. */
  limit?: number | null;
  /** --adaptive on or off. */
  adaptive?: boolean;
}

/**
 * Stores what changed in the batch's options and, when its order or priorities changed,
 * re-ranks its waiting tasks by them, a page at a time (a million tasks in bounded memory):
 * every claim after a page's commit, by any run or worker on the store, takes its tasks in the
 * new order. The options are written last, and only the ones given (a run may store a new
 * handler or file state meanwhile), so a `set` stopped half-way leaves the old ones stored, and
 * the next run's enqueue re-ranks every task by them (or `set` again finishes the change).
 * Running and finished tasks keep their rows as they are. A rate or a -j moves no task: the
 * runs on the store follow it at their next check of the batch.
 */
export async function reorderBatch(
  store: Pick<QueryStore, 'eachTaskPage' | 'learnedDurations'> & Pick<AdminStore, 'rerank'>,
  batch: BatchRecord,
  change: OrderChange,
): Promise<{ order: Order; priority: PriorityRule[]; rate: Rate | null; rateKey: string | null; limit: number | null; adaptive: boolean; moved: number }> {
  const stored = settingsOf(storedDefinition(batch));
  const after = {
    order: change.order ?? stored.order,
    priority: change.priority ?? stored.priority,
    rate: change.rate === undefined ? stored.rate : change.rate,
    limit: change.limit === undefined ? stored.concurrencyLimit : change.limit,
    adaptive: change.adaptive ?? stored.adaptive,
  };
  let moved = 0;
  if (change.order !== undefined || change.priority !== undefined) {
    const learned = after.order === 'history' ? await store.learnedDurations(batch.source) : undefined;
    const plan = { order: after.order, priority: after.priority, seed: batch.name, learned };
    await store.eachTaskPage({ batchId: batch.id, status: 'PENDING' }, async (tasks) => {
      const ranked = [...rankSpecs(tasks.map(specOf), plan)];
      const ranks: Rank[] = ranked.map((s, i) => ({ id: tasks[i]!.id, priority: s.priority ?? 0, rank: s.rank ?? 0 }));
      moved += await store.rerank(batch.id, ranks);
    });
  }
  const patch = {
    ...(change.order !== undefined ? { order: after.order } : {}),
    ...(change.priority !== undefined ? { priority: after.priority } : {}),
    ...(change.rate !== undefined ? { rate: after.rate } : {}),
    ...(change.limit !== undefined ? { concurrencyLimit: after.limit } : {}),
    ...(change.adaptive !== undefined ? { adaptive: after.adaptive } : {}),
  };
  await store.rerank(batch.id, [], patch);
  return { ...after, rateKey: stored.rateKey, moved };
}

/** A stored task as the ranking reads a spec: its key, stage, item, payload and fingerprint. */
function specOf(t: TaskRow) {
  return { key: t.key, payload: t.payload, fingerprint: t.fingerprint, ...(t.stage ? { stage: t.stage } : {}), ...(t.item !== null ? { item: t.item } : {}) };
}
