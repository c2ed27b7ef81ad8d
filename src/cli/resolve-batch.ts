import { UsageError } from '../errors.js';
import { expandBatchName } from '../job/batch-name.js';
import type { BatchRecord, QueryStore } from '../store/task-store.js';
import { printable } from './format.js';
import { commandLineFor } from './suggested-commands.js';

/**
 * The batch a command acts on: `--batch NAME`, or the most recently created one. `db` is
 * the store the user named, repeated in the commands the errors suggest.
 */
export async function resolveBatch(store: QueryStore, name: string | undefined, db?: string): Promise<BatchRecord> {
  if (name !== undefined) {
    const expanded = expandBatchName(name);
    const batch = await store.findBatch(expanded);
    if (!batch) throw new UsageError(`no batch named "${printable(expanded)}" in ${printable(store.location)}; \`${commandLineFor({ db }, ['batches'])}\` lists them`);
    return batch;
  }
  const latest = await store.latestBatch();
  if (!latest) throw new UsageError(`the store ${printable(store.location)} holds no batch yet; start one with \`splitdance run <source>\``);
  return latest;
}
