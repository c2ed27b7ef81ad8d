import { expandBatchName } from '../job/batch-name.js';
import { printable } from '../printable.js';
import { describeStore, isOldSchema, openStore, type TrustedOwners } from '../store/open-store.js';
import { PollBackoff } from './poll-backoff.js';
import { pause } from './signals.js';

/** How often a command looks again for the batch it was told to follow. */
const POLL_MS = 500;

/**
 * `worker --batch B` (or `watch --batch B`) started before B exists (workers launched beside the
 * `run` that creates it, or before it): waits until the store and the batch are there, telling
 * `say` so once. True once the batch exists; false when `signal` aborted the wait.
 */
export async function awaitBatch(
  db: string,
  name: string,
  signal: AbortSignal,
  say: (m: string) => void,
  { readonly = false, trust = [] }: { readonly?: boolean; trust?: TrustedOwners } = {},
): Promise<boolean> {
  const expanded = expandBatchName(name);
  const poll = new PollBackoff(POLL_MS);
  let said = false;
  for (;;) {
    // `readonly`: a command that only looks (watch), which may read another user's store.
    const store = await openStore(db, 'existing', readonly ? { readonly, inspect: true } : { trust }).catch((err: unknown) => {
      // A store the `run` it waits for is creating right now is at schema 0 until its first
      // transaction commits: opened for writing, the open waits for that (as a `read` open does).
      if (readonly && isOldSchema(err)) return openStore(db, 'existing');
      throw err;
    });
    try {
      if (store && (await store.findBatch(expanded))) return true;
    } finally {
      await store?.close();
    }
    if (!said) say(`waiting for batch "${printable(expanded)}" to appear in ${printable(describeStore(db))} (polling ${poll.describe()}; Ctrl-C stops)`);
    said = true;
    if (await pause(poll.next(), signal)) return false;
  }
}
