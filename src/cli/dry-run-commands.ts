/** `run --dry-run`: the command each task would run, rendered by the worker's own code, one line per task. */
import { outputFor } from '../job/stages.js';
import type { RunPlan } from '../job/plan-run.js';
import { wouldBeUpToDate } from '../job/planned-outputs.js';
import { outputPathsOf } from '../output/output-path.js';
import { hasUnsafe, printable } from '../printable.js';
import type { QueryStore, TaskSpec } from '../store/task-store.js';
import { renderExec } from '../template/exec-command.js';
import { renderGroup, type GroupMode } from '../template/group-command.js';
import type { HandlerSpec } from '../worker/protocol.js';
import { inputNow, reasonOf } from '../status/task-reason.js';

/** How many tasks' commands a dry run shows without --verbose. */
export const FIRST_COMMANDS = 20;

/**
 * One task a run would start: its key, and its command (`--exec`) or its payload (a module). A
 * group's command (`-n`, `-X`, …) is one entry: `keys` are its tasks', `key` the first of them.
 */
export type DryRunEntry = ({ key: string; keys?: string[]; command: string } | { key: string; payload: unknown } | { key: string; keys?: string[]; error: string }) & {
  /** Why it runs (a single task's entry): new, failed with retries left, waiting again (task-reason.ts). */
  reason?: string;
};

/** A task the run would not start, and why (`run --dry-run --json`'s `skipped`). */
export interface SkippedEntry {
  key: string;
  reason: string;
}

/**
 * The tasks the run would start, in the order of the source (what a new batch claims first),
 * each rendered as its first attempt's worker would render it (exec-command.ts): `{attempt}`
 * is 1, `{#}` the number the task has or would get in its batch, and `{out}` a temporary path
 * of the form the attempt writes (its random part is drawn per attempt). Tasks the run would
 * not start are left out: finished ones of a batch that exists, and declared outputs that are
 * up to date (unless --force). `each` is awaited per entry, up to `limit`; `more`: others
 * were left out by it.
 */
export async function eachDryRunEntry(
  plan: RunPlan,
  store: QueryStore | null,
  batchId: number | null,
  limit: number,
  each: (entry: DryRunEntry) => Promise<void>,
  /** Told of each task it would not start; `reason` is worked out only when asked for (it may stat the input). */
  skipped?: (key: string, reason: () => string) => void,
): Promise<{ shown: number; more: boolean }> {
  const s = plan.settings;
  // A task new to a batch that exists is numbered after its last (the enqueue's own rule).
  const base = store && batchId !== null ? await store.lastSeq(batchId) : 0;
  let place = 0;
  let shown = 0;
  // With many items per command (-n, -X, …): a stage's consecutive tasks, filled up to the group's size.
  const filling = new Map<string, { spec: TaskSpec; seq: number }[]>();
  for (const spec of plan.split()) {
    place++;
    const known = store && batchId !== null ? await store.getTask(batchId, spec.key) : undefined;
    if (known && known.status !== 'PENDING' && known.status !== 'RUNNING') {
      skipped?.(spec.key, () => reasonOf(known, [], false, inputNow(known), Date.now()).reason);
      continue;
    }
    if (!plan.inv.force && wouldBeUpToDate(s, spec, plan.batchName)) {
      skipped?.(spec.key, () => 'output up to date: its declared output is newer than its input (--force runs it)');
      continue;
    }
    const seq = known?.seq ?? base + place;
    const handler = handlerOf(plan, spec.stage ?? '');
    if (handler?.kind === 'exec' && handler.group) {
      const items = [...(filling.get(spec.stage ?? '') ?? []), { spec, seq }];
      filling.set(spec.stage ?? '', items);
      if (items.length < handler.group.max) continue;
      filling.delete(spec.stage ?? '');
      if (shown >= limit) return { shown, more: true };
      shown++;
      await each(groupEntryOf(plan, handler.template, handler.group.mode, items));
      continue;
    }
    if (shown >= limit) return { shown, more: true };
    shown++;
    // Why it runs: a task the batch has is read with its attempts (a few, for the tasks shown).
    const reason = known && store ? reasonOf(known, await store.attemptsOf(known.id), false, null, Date.now()).reason : 'new: not in the batch yet';
    await each({ ...entryOf(plan, spec, seq), reason });
  }
  // The last, smaller group of each stage.
  for (const [stage, items] of filling) {
    const handler = handlerOf(plan, stage);
    if (handler?.kind !== 'exec' || !handler.group) continue;
    if (shown >= limit) return { shown, more: true };
    shown++;
    await each(groupEntryOf(plan, handler.template, handler.group.mode, items));
  }
  return { shown, more: false };
}

function handlerOf(plan: RunPlan, stage: string): HandlerSpec | null {
  return plan.settings.stages.length ? (plan.settings.stages.find((x) => x.name === stage)?.handler ?? null) : plan.settings.handler;
}

/** A group's one command (a group has no declared output: plan-run refuses the pair). */
function groupEntryOf(plan: RunPlan, template: string, mode: GroupMode, items: { spec: TaskSpec; seq: number }[]): DryRunEntry {
  const keys = items.map((i) => i.spec.key);
  const tasks = items.map(({ spec, seq }) => ({ key: spec.key, batch: plan.batchName, stage: spec.stage ?? '', seq, attempt: 1, slot: 1, payload: spec.payload, inputs: {} }));
  try {
    const { argv, fallback } = renderGroup(template, tasks, mode);
    return { key: keys[0]!, keys, command: fallback ?? argv[2]! };
  } catch (err) {
    return { key: keys[0]!, keys, error: (err as Error).message };
  }
}

function entryOf(plan: RunPlan, spec: TaskSpec, seq: number): DryRunEntry {
  const stage = spec.stage ?? '';
  const handler = handlerOf(plan, stage);
  if (handler === null || handler.kind === 'module') return { key: spec.key, payload: spec.payload };
  // `{attempt}` and `{%}` as the first attempt in the first slot would see them.
  const task = { key: spec.key, batch: plan.batchName, stage, seq, attempt: 1, slot: 1, payload: spec.payload, inputs: {} };
  try {
    const out = outputFor(plan.settings, stage);
    const output = out ? outputPathsOf(out, task, '0'.repeat(32), 1) : null;
    const { argv, fallback } = renderExec(handler.template, { ...task, output });
    return { key: spec.key, command: fallback ?? argv[2]! };
  } catch (err) {
    // A value only a run has (a needed stage's result), or a path no attempt could write.
    return { key: spec.key, error: (err as Error).message };
  }
}

/**
 * An entry as one line: an `--exec` command as the shell line `/bin/sh -c` runs, and a line
 * holding a newline or another control character as the worker's argv with the line in
 * bash's `$'…'` (one entry stays one line, and nothing in it acts on a terminal); a module's
 * task as its key and payload in JSON.
 */
export function entryLine(entry: DryRunEntry): string {
  if ('payload' in entry) return `${JSON.stringify(entry.key)} ${JSON.stringify(entry.payload)}`;
  if ('error' in entry) return `# ${printable(entry.key)}: not rendered before it runs: ${printable(entry.error)}`;
  return hasUnsafe(entry.command) ? `/bin/sh -c ${dollarQuote(entry.command)}` : entry.command;
}

/** bash's ANSI-C quoting: backslash and quote escaped, every unsafe character as its escape. */
function dollarQuote(text: string): string {
  const escaped = printable(text.replace(/\\/g, '\\\\').replace(/'/g, "\\'"));
  return `$'${escaped.replace(/\\u\{([0-9a-f]+)\}/g, (_, hex: string) => `\\U${hex.padStart(8, '0')}`)}'`;
}
