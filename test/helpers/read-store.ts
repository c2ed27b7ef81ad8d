// A store read through its own verbs (task-store.ts), not with SQL: what a test checks of tasks and attempts.
import { openStore } from '../../src/store/open-store.js';
import type { AttemptRow, BatchRecord, Counts, PendingOutput, TaskRow } from '../../src/store/records.js';
import type { TaskStore } from '../../src/store/task-store.js';

/** Opens the store at `db` read-only for `read`, then closes it. */
export async function readStore<T>(db: string, read: (store: TaskStore) => Promise<T>): Promise<T> {
  const store = await openStore(db, 'read');
  try {
    return await read(store);
  } finally {
    await store.close();
  }
}

async function batchOf(store: TaskStore, name?: string): Promise<BatchRecord> {
  const batch = name === undefined ? await store.latestBatch() : await store.findBatch(name);
  if (!batch) throw new Error(`no batch ${name ?? '(latest)'} in the store`);
  return batch;
}

/** Every task of a batch (the latest without a name), in the store's order. */
export const tasksIn = (db: string, batch?: string): Promise<TaskRow[]> =>
  readStore(db, async (s) => s.listTasks({ batchId: (await batchOf(s, batch)).id }));

/** One task of a batch and its attempts, oldest first. */
export const taskWithAttempts = (db: string, key: string, batch?: string): Promise<{ task: TaskRow; attempts: AttemptRow[] }> =>
  readStore(db, async (s) => {
    const task = await s.getTask((await batchOf(s, batch)).id, key);
    if (!task) throw new Error(`no task ${key}`);
    return { task, attempts: await s.attemptsOf(task.id) };
  });

/** Every attempt of a batch's tasks, by task in the store's order, each task's oldest first. */
export const attemptsIn = (db: string, batch?: string): Promise<(AttemptRow & { key: string })[]> =>
  readStore(db, async (s) => {
    const out: (AttemptRow & { key: string })[] = [];
    for (const t of await s.listTasks({ batchId: (await batchOf(s, batch)).id })) for (const a of await s.attemptsOf(t.id)) out.push({ ...a, key: t.key });
    return out;
  });

/** A batch's successes whose declared output still waits at its temporary path (committed, not renamed yet), through `pendingOutputs`. */
export const pendingOutputsIn = (db: string, batch?: string): Promise<PendingOutput[]> =>
  readStore(db, async (s) => s.pendingOutputs((await batchOf(s, batch)).id));

/** How many tasks of a batch (the latest without a name) have each status, through `counts` (what `status --json` adds up). */
export const countsIn = (db: string, batch?: string): Promise<Counts> => readStore(db, async (s) => s.counts((await batchOf(s, batch)).id));

/** `countsIn(db).succeeded` while a run may still be creating the store: 0 until it and its batch exist. */
export const succeededSoFar = (db: string): Promise<number> =>
  countsIn(db).then(
    (c) => c.succeeded,
    () => 0,
  );
