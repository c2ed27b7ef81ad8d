import { openStore, resolveDbPath, trustedOwners } from '../store/open-store.js';
import type { BatchRecord, CommandStore } from '../store/task-store.js';
import { printable } from './format.js';
import type { Io } from './io.js';
import { resolveBatch } from './resolve-batch.js';
import { givenDb, type Target } from './suggested-commands.js';

/** How a command reached its batch: what suggestions name, and whether it was the default. */
export interface BatchContext {
  /** The batch and the store the user gave, for suggested commands. */
  target: Target;
  /** No --batch: the most recently created batch was taken (and should be named). */
  defaulted: boolean;
}

/**
 * Opens the existing store (never creating one), resolves the batch, and closes the store
 * afterwards. `readonly`: for commands that only look, so they work on a store they cannot
 * write (a read-only mount, a backup, another user's store); the others open only a store
 * the user owns, or one whose owner --trust-store-owner names.
 */
export async function withBatch<T>(
  flags: { db?: string; batch?: string; trustStoreOwner?: string[] },
  io: Io,
  fn: (store: CommandStore, batch: BatchRecord, ctx: BatchContext) => Promise<T>,
  { readonly = false }: { readonly?: boolean } = {},
): Promise<T> {
  const db = resolveDbPath(flags.db, io.cwd, io.env);
  const store = readonly ? await openStore(db, 'read') : await openStore(db, 'write', { trust: trustedOwners(flags.trustStoreOwner) });
  try {
    const dbGiven = givenDb(flags.db, io);
    const batch = await resolveBatch(store, flags.batch, dbGiven);
    return await fn(store, batch, { target: { batch: batch.name, db: dbGiven }, defaulted: flags.batch === undefined });
  } finally {
    await store.close();
  }
}

/** Said on stderr when no --batch was given (SPEC §6), so data piped from stdout stays data. */
export function defaultedNote(name: string): string {
  return `batch ${printable(name)} (the most recent; --batch NAME picks another)`;
}

