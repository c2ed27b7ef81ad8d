import { inputNow, reasonOf, type Rerun } from '../../status/task-reason.js';
import type { BatchRecord, TaskRow } from '../../store/task-store.js';
import { printable } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { commandLineFor, type Target } from '../suggested-commands.js';
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
      const { task, attempts } = await findTask(store, batch, key, target);
      const r = reasonOf(task, attempts, batch.paused, inputNow(task), Date.now());
      const rerun = r.rerun === null ? null : rerunOf(r.rerun, task, batch, target);
      const resume = r.paused ? commandLineFor(target, ['resume']) : null;
      if (flags.json) {
        line(io.stdout, JSON.stringify({ key: task.key, status: task.status, verdict: r.verdict, reason: r.reason, paused: r.paused, rerun: rerun?.command ?? null, note: rerun?.note ?? null }));
        return 0;
      }
      const verb = r.verdict === 'run' ? 'will run' : r.verdict === 'running' ? 'is claimed' : 'will not run';
      line(io.stdout, `${printable(task.key)} in batch ${printable(batch.name)} ${verb}: ${printable(r.reason)}`);
      if (resume) line(io.stdout, `the batch is paused: nothing runs until \`${resume}\``);
      if (rerun) line(io.stdout, `to run it again: ${rerun.command ? `\`${rerun.command}\`${rerun.note ? ` (${rerun.note})` : ''}` : rerun.note}`);
      return 0;
    },
    { readonly: true },
  );
}

/** The command that runs the task again, spelled with its batch and store, and a note; a new batch is the user's run command with `--batch NEW`, which only they know. */
function rerunOf(how: Rerun, task: TaskRow, batch: BatchRecord, target: Target): { command: string | null; note: string | null } {
  switch (how) {
    case 'retry-failed':
      return { command: commandLineFor(target, ['retry-failed', '--key', task.key, '--run']), note: 'a fresh budget of retries' };
    case 'retry-needed':
      return { command: commandLineFor(target, ['retry-failed', '--run']), note: 'the failed stage runs again, and the stages that need it with it' };
    case 'rerun-changed':
      return { command: commandLineFor(target, ['run', '--rerun-changed'], batch.source), note: null };
    case 'new-batch':
      return { command: null, note: 'only a new batch runs it: your run command with --batch NEW' };
    case 'new-batch-force':
      return { command: null, note: 'only a new batch runs it: your run command with --batch NEW --force' };
  }
}
