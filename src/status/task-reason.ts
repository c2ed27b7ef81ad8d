/** `splitdance why KEY`: why a task will run or be skipped, from its row and its input as it is now. */
import { statSync } from 'node:fs';
import type { BatchRecord, TaskRow } from '../store/task-store.js';

/**
 * What runs a skipped task again: `retry-failed --key KEY --run`; `run --rerun-changed` (now,
 * or once its input changes, beside a new batch); a new batch (`--batch NEW`, with `--force`
 * when its declared output is up to date).
 */
export type Rerun = 'retry-failed' | 'rerun-changed' | 'rerun-changed-later' | 'new-batch' | 'new-batch-force';

/** What the next `run` (or a worker) does with the task, and why. */
export interface TaskReason {
  /** `run`: the next run (or a worker) runs it; `running`: it runs now; `skip`: nothing runs it as it is. */
  verdict: 'run' | 'running' | 'skip';
  /** Why, in a few words: "new", "failed, 2 retries left", "input changed since its success", … */
  reason: string;
  /** What would run it (again), when something would; null when it runs anyway (the CLI spells it with the batch and store). */
  rerun: Rerun | null;
}

/** The input of a file task as it is now, against the size:mtime it had when split: changed, gone, or the same (null: not a file, or not checked). */
export function inputNow(t: TaskRow): 'changed' | 'gone' | 'same' | null {
  if (t.fingerprint === null || !/^\d+:\d+$/.test(t.fingerprint) || !t.payload.path) return null;
  try {
    const s = statSync(t.payload.path);
    return `${s.size}:${Math.trunc(s.mtimeMs)}` === t.fingerprint ? 'same' : 'changed';
  } catch {
    return 'gone';
  }
}

const retriesLeft = (t: TaskRow) => {
  const left = t.maxAttempts - t.attempts;
  return `${left} ${left === 1 ? 'retry' : 'retries'} left`;
};

/** Why `t` will run or be skipped, `input` as inputNow found it, at `now`. */
export function reasonOf(t: TaskRow, batch: BatchRecord, input: ReturnType<typeof inputNow>, now: number): TaskReason {
  const paused = batch.paused ? ' once the batch is resumed (`splitdance resume`)' : '';
  switch (t.status) {
    case 'PENDING': {
      const needs = t.needs.length ? `, after its stage's needs (${t.needs.join(', ')}) succeed for its item` : '';
      if (t.attempts === 0) return { verdict: 'run', reason: `new: never attempted; the next run or worker runs it${needs}${paused}`, rerun: null };
      const due = t.nextRunAt > now ? `due ${new Date(t.nextRunAt).toISOString()} (its backoff)` : 'due now';
      return { verdict: 'run', reason: `failed ${t.attempts} ${t.attempts === 1 ? 'time' : 'times'}, ${retriesLeft(t)}: runs again ${due}${needs}${paused}`, rerun: null };
    }
    case 'RUNNING':
      return { verdict: 'running', reason: `running now (attempt ${t.attempts}${t.workerId ? ` on worker ${t.workerId}` : ''})`, rerun: null };
    case 'FAILED':
      return {
        verdict: 'skip',
        reason: `failed after ${t.attempts} ${t.attempts === 1 ? 'attempt' : 'attempts'}${t.lastError ? `: ${t.lastError}` : ''}; a run does not try it again`,
        rerun: 'retry-failed',
      };
    case 'CANCELLED':
      return { verdict: 'skip', reason: 'cancelled (splitdance cancel): it does not run in this batch', rerun: 'new-batch' };
    case 'SUCCESS': {
      if (input === 'changed') return { verdict: 'skip', reason: 'succeeded, but its input changed since (size or modification time)', rerun: 'rerun-changed' };
      if (input === 'gone') return { verdict: 'skip', reason: 'succeeded; its input file is gone since', rerun: null };
      if (t.upToDate) return { verdict: 'skip', reason: 'output up to date: its declared output was newer than its input, so nothing ran', rerun: 'new-batch-force' };
      return { verdict: 'skip', reason: 'succeeded in this batch', rerun: input === 'same' ? 'rerun-changed-later' : 'new-batch' };
    }
  }
}
