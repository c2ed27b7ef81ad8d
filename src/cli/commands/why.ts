import { reasonOf, inputNow, type Rerun } from '../../status/task-reason.js';
import type { BatchRecord, TaskRow } from '../../store/task-store.js';
import { commandLineFor, type Target } from '../suggested-commands.js';
import { printable } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { findTask } from '../task-json.js';
import { withBatch } from '../with-store.js';

export interface WhyFlags extends OutputFlags {
  db?: string;
  batch?: string;
}

/**
 * `splitdance why KEY`: whether the next `run` (or a worker) runs the task or skips it, and why
 * ("new", "failed 2 times, 1 retry left", "input changed since its success", "output up to
 * date", "succeeded in this batch"), and what would run it again. A file task's input is looked
 * at now (its size and modification time against those it was split with).
 */
export async function whyCommand(key: string, flags: WhyFlags, io: Io): Promise<number> {
  return withBatch(
    flags,
    io,
    async (store, batch, { target }) => {
      const { task } = await findTask(store, batch, key, target);
      const r = reasonOf(task, batch, inputNow(task), Date.now());
      const rerun = r.rerun === null ? null : rerunLine(r.rerun, task, batch, target);
      if (flags.json) line(io.stdout, JSON.stringify({ key: task.key, status: task.status, verdict: r.verdict, reason: r.reason, rerun }));
      else {
        const verb = r.verdict === 'run' ? 'will run' : r.verdict === 'running' ? 'is running' : 'will not run';
        line(io.stdout, `${printable(task.key)} in batch ${printable(batch.name)} ${verb}: ${printable(r.reason)}`);
        if (rerun) line(io.stdout, `to run it again: ${printable(rerun)}`);
      }
      return 0;
    },
    { readonly: true },
  );
}

/** The command that runs the task again, spelled with its batch and store (a new batch's name is the user's to choose). */
function rerunLine(how: Rerun, task: TaskRow, batch: BatchRecord, target: Target): string {
  const newBatch = (force: boolean) => `a new batch: ${commandLineFor({ db: target.db }, ['run', '--batch', 'NEW', ...(force ? ['--force'] : [])], batch.source)}`;
  switch (how) {
    case 'retry-failed':
      return `${commandLineFor(target, ['retry-failed', '--key', task.key, '--run'])} (a fresh budget of retries)`;
    case 'rerun-changed':
      return commandLineFor(target, ['run', '--rerun-changed'], batch.source);
    case 'rerun-changed-later':
      return `${commandLineFor(target, ['run', '--rerun-changed'], batch.source)} once its input changes, or ${newBatch(false)}`;
    case 'new-batch':
      return newBatch(false);
    case 'new-batch-force':
      return newBatch(true);
  }
}
