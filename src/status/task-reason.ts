/** `splitdance why KEY`: why a task will run or be skipped, from its row, its attempts and its input as it is now. */
import { statSync } from 'node:fs';
import type { AttemptRow, TaskRow } from '../store/task-store.js';

/**
 * What runs a skipped task again, for the CLI to spell with its batch and store:
 * `retry-failed --key KEY --run` (`retry-needed`: `retry-failed --run`, which brings back the
 * stages that need a failed one); `run --rerun-changed`; `new-batch`: only a new batch does
 * (the same run with `--batch NEW`, and `--force` when its declared output is up to date).
 */
export type Rerun = 'retry-failed' | 'retry-needed' | 'rerun-changed' | 'new-batch' | 'new-batch-force';

/** What the next `run` (or a worker) does with the task, and why. */
export interface TaskReason {
  /** `run`: the next run (or a worker) runs it; `running`: it is claimed now; `skip`: nothing runs it as it is. */
  verdict: 'run' | 'running' | 'skip';
  /** Why, in a few words: "new", "failed 2 times, 1 retry left", "input changed since its success", … */
  reason: string;
  /** What would run it (again); null when it runs anyway or nothing would. */
  rerun: Rerun | null;
  /** The batch is paused: nothing runs it until `resume`. */
  paused: boolean;
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

const times = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const at = (ms: number) => new Date(ms).toISOString();

/** Why `t` will run or be skipped, from its attempts (oldest first), whether its batch is `paused`, `input` as inputNow found it, at `now`. */
export function reasonOf(t: TaskRow, attempts: AttemptRow[], paused: boolean, input: ReturnType<typeof inputNow>, now: number): TaskReason {
  const last = attempts.at(-1);
  const of = (verdict: TaskReason['verdict'], reason: string, rerun: Rerun | null = null): TaskReason => ({ verdict, reason, rerun, paused });
  switch (t.status) {
    case 'PENDING': {
      const needs = t.needs.length ? `, once the stages it needs (${t.needs.join(', ')}) succeed for its item` : '';
      const due = t.nextRunAt > now ? `due ${at(t.nextRunAt)}` : 'due now';
      if (last?.outcome === 'BUSY') return of('run', `answered busy (no attempt spent): runs again ${due}${needs}`);
      if (t.attempts > 0) return of('run', `failed ${times(t.attempts, 'time')}, ${times(t.maxAttempts - t.attempts, 'retry', 'retries')} left: runs again ${due} (its backoff)${needs}`);
      if (attempts.length === 0) return of('run', `new: never attempted; the next run or worker runs it${needs}`);
      // Attempted before, none counted now: retry-failed reset it, a rerun put it back, or its last attempt was given back unstarted.
      const how = last?.outcome === 'INTERRUPTED' ? 'its last attempt was given back (interrupted, not counted)' : 'its retries were reset (retry-failed, or a rerun put it back)';
      return of('run', `waiting to run again: ${times(attempts.length, 'attempt')} recorded, ${how}; runs ${due}${needs}`);
    }
    case 'RUNNING':
      return of('running', `claimed now: attempt #${last?.attempt ?? t.attempts}${t.workerId ? ` on worker ${t.workerId}` : ''}, running or queued behind another attempt on its worker`);
    case 'FAILED':
      return of('skip', `failed after ${times(t.attempts, 'attempt')}${t.lastError ? `: ${t.lastError}` : ''}; a run does not try it again`, 'retry-failed');
    case 'CANCELLED':
      // A stage whose need failed is cancelled with the reason `needs STAGE: FAILED` (stage-graph.ts).
      if (t.lastError?.startsWith('needs ')) return of('skip', `cancelled: ${t.lastError}`, 'retry-needed');
      return of('skip', 'cancelled (splitdance cancel): it does not run in this batch', 'new-batch');
    case 'SUCCESS': {
      if (input === 'changed') return of('skip', 'succeeded, but its input changed since (size or modification time)', 'rerun-changed');
      if (input === 'gone') return of('skip', 'succeeded; its input file is not there now (gone, or on another host)');
      if (t.upToDate) return of('skip', 'output up to date: its declared output was newer than its input, so nothing ran', 'new-batch-force');
      return of('skip', `succeeded in this batch${input === 'same' ? '; `run --rerun-changed` runs it again once its input changes' : ''}`, 'new-batch');
    }
  }
}
