/** The lines a run ends with for a person: tasks left retrying, the counts, and what to do next. */
import type { ChalkInstance } from 'chalk';
import type { RetryingTask, RunSummary } from '../run/run-batch.js';
import { formatMs } from '../job/units.js';
import { plural, printable } from './format.js';
import { shellWord, commandLineFor, type Target } from './suggested-commands.js';

/** What the reporter counted of this run, beside the batch's counts. */
export interface RunTally {
  /** Attempts that ended in this run (also those retried later). */
  attempts: number;
  /** Tasks this run added. */
  inserted: number;
  /** Tasks this run recorded SUCCESS without running: their declared output was up to date. */
  upToDate: number;
}

export interface SummaryOptions {
  /** This run replaced the batch's handler or output: FAILED tasks keep their old failure until retried. */
  definitionChanged: boolean;
  /** `run` only: say so when it ran nothing (RunReporter.nothingRan). */
  nothingRan: { outputs: boolean } | null;
}

/** The end of a run, after the bar's last frame: one line each, the data in them escaped. */
export function summaryLines(summary: RunSummary, here: RunTally, options: SummaryOptions, c: ChalkInstance, target: Target): string[] {
  const lines: string[] = [];
  const k = summary.counts;
  for (const t of summary.retrying) lines.push(retryingLine(t, c));
  const unnamed = k.retrying - summary.retrying.length;
  if (unnamed > 0) lines.push(`… and ${plural(unnamed, 'more retrying task')}`);
  if (summary.retrying.length) lines.push(`see them: ${commandLineFor(target, ['tasks', '--status', 'retrying'])}`);
  const parts = [`${k.succeeded} succeeded${here.upToDate ? ` (${here.upToDate} up to date, not run)` : ''}`, `${k.failed} failed`];
  if (k.cancelled) parts.push(`${k.cancelled} cancelled`);
  if (k.pending + k.retrying + k.running + k.queued) parts.push(`${k.pending + k.retrying + k.running + k.queued} unfinished`);
  const head = summary.exitCode === 0 ? c.green('done') : c.yellow(summary.reason);
  lines.push(`${head}: ${parts.join(', ')} of ${k.total} in ${formatMs(summary.elapsedMs)} (batch ${printable(summary.batch)})`);
  if (options.nothingRan) lines.push(...nothingRanLines(summary, here, options.nothingRan));
  if (k.failed) {
    const retry = options.definitionChanged ? 'retry them with the new handler, now stored' : 'retry them';
    lines.push(`see the failures: ${commandLineFor(target, ['status'])}; ${retry}: ${commandLineFor(target, ['retry-failed', '--run'])}`);
  }
  return lines;
}

/** A task left waiting for a retry when the run ends unfinished, said like a FAILED one. */
function retryingLine(t: RetryingTask, c: ChalkInstance): string {
  const due = t.nextRunAt > Date.now() ? `, next in ${formatMs(t.nextRunAt - Date.now())}` : '';
  return `${c.yellow('retrying')} ${printable(t.key)} after ${plural(t.attempts, 'attempt')}${due}: ${printable(t.lastError ?? 'failed')}`;
}

/**
 * Every task was already finished and this run added none and ran none: one line saying so
 * (a second run of a stdin one-liner prints nothing on stdout), and one with the way to run
 * them again (a new batch; with `--force` where declared outputs would be up to date) when
 * all succeeded; with failures the next line names `retry-failed --run`. 80 columns each
 * for a batch name of up to about 20 characters (a default stdin batch is 14).
 */
function nothingRanLines(summary: RunSummary, here: RunTally, nothingRan: { outputs: boolean }): string[] {
  const k = summary.counts;
  if (here.attempts > 0 || here.inserted > 0 || k.total === 0) return [];
  if (k.pending + k.retrying + k.running + k.queued > 0) return [];
  const all = k.failed + k.cancelled === 0;
  const one = k.total === 1;
  const tasks = one ? 'the one task' : `all ${k.total} tasks`;
  const lines = [`nothing ran: ${tasks} of batch ${printable(summary.batch)} ${all ? (one ? 'was' : 'were') : 'had'} already ${all ? 'done' : 'finished'}`];
  if (all) lines.push(`to run ${one ? 'it' : 'them'} again, add --batch ${printable(shellWord(`${summary.batch}-2`))}${nothingRan.outputs ? ' --force' : ''} (a new batch)`);
  return lines;
}
