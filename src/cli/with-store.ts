import { openStore, resolveDbPath } from '../store/open-store.js';
import type { BatchRecord, TaskStore } from '../store/task-store.js';
import type { Io } from './io.js';
import { resolveBatch } from './resolve-batch.js';

/** Opens the existing store (never creating one), resolves the batch, and closes the store afterwards. */
export async function withBatch<T>(
  flags: { db?: string; batch?: string },
  io: Io,
  fn: (store: TaskStore, batch: BatchRecord) => Promise<T>,
): Promise<T> {
  const store = await openStore(resolveDbPath(flags.db, io.cwd, io.env), { create: false });
  try {
    return await fn(store, await resolveBatch(store, flags.batch));
  } finally {
    await store.close();
  }
}
