import { UsageError } from '../../errors.js';
import { keyMatcher, matchesEveryUnfinished, requireFilter } from '../filters.js';
import { printable } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { givenDb, commandLineFor } from '../suggested-commands.js';
import { withBatch } from '../with-store.js';

export interface CancelFlags extends OutputFlags {
  db?: string;
  trustStoreOwner?: string[];
  batch?: string;
  key?: string;
  all?: boolean;
}

/**
 * `splitdance cancel [--key GLOB]`: matching PENDING tasks (waiting retries included) end
 * CANCELLED now; RUNNING ones finish, and end CANCELLED instead of retrying unless they
 * succeed. Stage tasks that need a cancelled task are cancelled with it. Through the
 * store, so coordinators anywhere see it at their next claim. A `--key` glob that matches
 * every unfinished task of the batch needs `--all`: cancelling is for good.
 */
export async function cancelCommand(flags: CancelFlags, io: Io): Promise<number> {
  const key = requireFilter(flags.key, '--key');
  return withBatch(flags, io, async (store, batch) => {
    const keyMatches = await keyMatcher(store, batch.id, key);
    if (keyMatches && !flags.all) {
      const c = await store.counts(batch.id);
      const unfinished = c.total - c.succeeded - c.failed - c.cancelled;
      if (await matchesEveryUnfinished(store, batch.id, keyMatches, unfinished)) {
        const all = commandLineFor({ batch: batch.name, db: givenDb(flags.db, io) }, ['cancel', '--key', key!, '--all']);
        throw new UsageError(`--key matches every one of the ${unfinished} unfinished tasks of batch ${printable(batch.name)}, and a cancel is for good; to cancel them all: ${all}`);
      }
    }
    const r = await store.cancel({ batchId: batch.id, keyMatches });
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
