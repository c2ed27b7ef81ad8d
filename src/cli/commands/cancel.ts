import { keyMatcher, requireFilter } from '../filters.js';
import { printable } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { withBatch } from '../with-store.js';

export interface CancelFlags extends OutputFlags {
  db?: string;
  trustStoreOwner?: string[];
  batch?: string;
  key?: string;
}

/**
 * `splitdance cancel [--key GLOB]`: matching PENDING tasks (waiting retries included) end
 * CANCELLED now; RUNNING ones finish, and end CANCELLED instead of retrying unless they
 * succeed. Stage tasks that need a cancelled task are cancelled with it. Through the
 * store, so coordinators anywhere see it at their next claim.
 */
export async function cancelCommand(flags: CancelFlags, io: Io): Promise<number> {
  const key = requireFilter(flags.key, '--key');
  return withBatch(flags, io, async (store, batch) => {
    const r = await store.cancel({ batchId: batch.id, keyMatches: await keyMatcher(store, batch.id, key) });
    if (flags.json) line(io.stdout, JSON.stringify({ batch: batch.name, ...r }));
    else if (!flags.quiet) {
      const parts = [`${r.cancelled} pending task${r.cancelled === 1 ? '' : 's'} cancelled`];
      if (r.dependents) parts.push(`${r.dependents} dependent${r.dependents === 1 ? '' : 's'} cancelled with them`);
      if (r.stopping) parts.push(`${r.stopping} running (they finish; unless they succeed they end CANCELLED)`);
      line(io.stderr, `batch ${printable(batch.name)}${key !== undefined ? ` (keys ${printable(key)})` : ''}: ${parts.join(', ')}`);
    }
    return 0;
  });
}
