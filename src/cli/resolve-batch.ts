import { UsageError } from '../errors.js';
import { expandBatchName } from '../job/batch-name.js';
import type { BatchRecord, TaskStore } from '../store/task-store.js';

/** The batch a command acts on: `--batch NAME`, or the most recently created one. */
export async function resolveBatch(store: TaskStore, name: string | undefined): Promise<BatchRecord> {
  if (name !== undefined) {
    const expanded = expandBatchName(name);
    const batch = await store.findBatch(expanded);
    if (!batch) throw new UsageError(`no batch named "${expanded}" in ${store.location}; \`splitdance batches\` lists them`);
    return batch;
  }
  const latest = await store.latestBatch();
  if (!latest) throw new UsageError(`the store ${store.location} holds no batch yet; start one with \`splitdance run <source>\``);
  return latest;
}
