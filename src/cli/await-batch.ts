import { expandBatchName } from '../job/batch-name.js';
import { isOldSchema, openStore, type TrustedOwners } from '../store/open-store.js';
import { redactUrl } from '../store/postgres/pg-url.js';
import { printable } from './format.js';
import { line, type Io } from './io.js';

/** How often a worker looks again for the batch it was told to join. */
const POLL_MS = 500;

/**
 * `worker --batch B` started before B exists (workers launched beside the `run` that
 * creates it, or before it): waits until the store and the batch are there, saying so once.
 * Returns the signal that ended the wait, or null once the batch exists.
 */
export async function awaitBatch<S extends string>(
  db: string,
  name: string,
  quiet: boolean,
  io: Io,
  seen: () => S | null,
  { readonly = false, trust = [] }: { readonly?: boolean; trust?: TrustedOwners } = {},
): Promise<S | null> {
  const expanded = expandBatchName(name);
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
      if (store && (await store.findBatch(expanded))) return null;
    } finally {
      await store?.close();
    }
    if (!said && !quiet) line(io.stderr, `waiting for batch "${printable(expanded)}" to appear in ${printable(redactUrl(db))} (polling every ${POLL_MS} ms; Ctrl-C stops)`);
    said = true;
    for (let waited = 0; waited < POLL_MS && !seen(); waited += 100) await new Promise((r) => setTimeout(r, 100));
    if (seen()) return seen();
  }
}
