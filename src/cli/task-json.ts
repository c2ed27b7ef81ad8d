/** A task as the commands show it: found by its key (or a usage error naming the way on), and its JSON fields. */
import { UsageError } from '../errors.js';
import type { AttemptRow, BatchRecord, QueryStore, TaskRow } from '../store/task-store.js';
import { iso, printable } from './format.js';
import { commandLineFor, type Target } from './suggested-commands.js';

export async function findTask(
  store: QueryStore,
  batch: BatchRecord,
  key: string,
  target: Target,
): Promise<{ task: TaskRow; attempts: AttemptRow[] }> {
  const task = await store.getTask(batch.id, key);
  if (!task) throw new UsageError(`no task "${printable(key)}" in batch ${printable(batch.name)}; \`${commandLineFor(target, ['tasks'])}\` lists the keys`);
  return { task, attempts: await store.attemptsOf(task.id) };
}

/**
 * A task's fields in `tasks --json` (each row of a page as it is read) and `show --json`.
 * `result` is the stored result: the JSON a module handler returned (a declared output's
 * `{out}` folded in), or null; parsed here from the stored text, which is bounded.
 */
export function taskJson(t: TaskRow) {
  return {
    key: t.key,
    stage: t.stage || null,
    item: t.item,
    status: t.status,
    attempts: t.attempts,
    maxAttempts: t.maxAttempts,
    lastError: t.lastError,
    durationMs: t.finishedAt !== null && t.startedAt !== null ? t.finishedAt - t.startedAt : null,
    nextRunAt: t.status === 'PENDING' && t.nextRunAt > 0 ? iso(t.nextRunAt) : null,
    startedAt: iso(t.startedAt),
    finishedAt: iso(t.finishedAt),
    workerId: t.workerId,
    upToDate: t.upToDate,
    result: t.result === null ? null : (JSON.parse(t.result) as unknown),
  };
}
