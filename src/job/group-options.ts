/**
 * Many items per command (SPEC §10): `-n N`, `-N N`, `-X`, `-m` and `--max-items N`, or the job
 * file's `maxArgs`, `maxReplaceArgs`, `xargs`, `multiple` and `maxItems`, checked once into the
 * handler they belong to: an `--exec` command's `group`, a module's `maxItems`. The handler is
 * stored on the batch, so a `worker` on another host runs the same groups.
 */
import { UsageError } from '../errors.js';
import { wrapError } from '../printable.js';
import { checkGroupTemplate } from '../template/group-command.js';
import type { GroupSpec, HandlerSpec } from '../worker/protocol.js';

/** How many items one `-X`/`-m` command gets at most when `--max-items` is not given. */
const DEFAULT_MAX_ITEMS = 64;
/**
 * The most items one command or `batch` call may hold: a command line holds far fewer (ARG_MAX),
 * and every free place claims this many tasks in one transaction.
 */
export const MAX_GROUP_ITEMS = 1024;

/** The grouping words one source gave, their values parsed (each a whole number ≥ 1). */
export interface GroupGiven {
  n?: number;
  N?: number;
  X?: boolean;
  m?: boolean;
  maxItems?: number;
}

/** How a source names each word in a refusal: the flags, or the job file's fields. */
export interface GroupWords {
  n: string;
  N: string;
  X: string;
  m: string;
  maxItems: string;
  exec: string;
  handler: string;
  pipe: string;
  output: string;
}

export const FLAG_WORDS: GroupWords = { n: '-n', N: '-N', X: '-X', m: '-m', maxItems: '--max-items', exec: '--exec', handler: '--handler', pipe: '--pipe', output: '--output' };

export const FIELD_WORDS: GroupWords = {
  n: '"maxArgs"',
  N: '"maxReplaceArgs"',
  X: '"xargs"',
  m: '"multiple"',
  maxItems: '"maxItems"',
  exec: '"exec"',
  handler: '"handler"',
  pipe: '"pipe"',
  output: '"output"',
};

const MODES = ['n', 'N', 'X', 'm'] as const;

/**
 * `handler` (as one source gave it: an exec with its `pipe`, or a module; undefined: none) with
 * that source's grouping words added, or a UsageError naming them. `-n 1` is no group.
 */
export function groupedHandler(handler: HandlerSpec | undefined, given: GroupGiven, w: GroupWords): HandlerSpec | undefined {
  const modes = MODES.filter((k) => given[k] !== undefined && given[k] !== false);
  if (modes.length > 1) {
    throw new UsageError(wrapError(`give either ${w[modes[0]!]} or ${w[modes[1]!]}, not both: each says how the items of one command are grouped`));
  }
  const mode = modes[0];
  const { maxItems } = given;
  if (handler === undefined) {
    if (mode !== undefined) throw new UsageError(wrapError(`${w[mode]} puts many items into one ${w.exec} command: give ${w.exec} with it, or leave ${w[mode]} out`));
    if (maxItems !== undefined) {
      throw new UsageError(wrapError(`${w.maxItems} bounds the items of one ${w.exec} command (with ${w.X} or ${w.m}) or of one call of a ${w.handler} module's batch export: give one of them with it`));
    }
    return undefined;
  }
  if (handler.kind === 'module') {
    if (mode !== undefined) {
      throw new UsageError(wrapError(`${w[mode]} groups the items of an ${w.exec} command; a ${w.handler} module groups them by exporting batch(tasks, ctx), and ${w.maxItems} N bounds how many one call gets: leave ${w[mode]} out`));
    }
    return maxItems === undefined ? handler : { ...handler, maxItems };
  }
  if (mode === undefined) {
    if (maxItems !== undefined) {
      throw new UsageError(wrapError(`${w.maxItems} bounds how many items ${w.X} or ${w.m} put into one command (${w.n} N says it itself): add ${w.X}, ${w.m} or ${w.n} N, or leave ${w.maxItems} out`));
    }
    return handler;
  }
  if (handler.pipe) {
    throw new UsageError(wrapError(`${w[mode]} puts many items into one command, and ${w.pipe} gives a command one item's (or one chunk's) bytes on its stdin: leave out ${w.pipe} or ${w[mode]}`));
  }
  const count = mode === 'n' ? given.n! : mode === 'N' ? given.N! : undefined;
  if (count !== undefined && maxItems !== undefined) {
    throw new UsageError(wrapError(`${w[mode]} ${count} already says how many items one command gets: leave ${w.maxItems} out`));
  }
  if (mode === 'n' && count === 1) return handler; // one item per command: no group
  return { ...handler, group: { mode, max: count ?? maxItems ?? DEFAULT_MAX_ITEMS } };
}

/** The grouping words of a stored group as flags: `-n 64`, `-N 2`, `-X`, `-m --max-items 8`. */
export function groupFlags(group: GroupSpec): string {
  if (group.mode === 'n' || group.mode === 'N') return `-${group.mode} ${group.max}`;
  return `-${group.mode}${group.max === DEFAULT_MAX_ITEMS ? '' : ` --max-items ${group.max}`}`;
}

/** The grouping words of a stored group as one source names them: `-n 64`, or `"maxArgs": 64`. */
function groupWords(group: GroupSpec, w: GroupWords): string {
  if (w === FLAG_WORDS) return groupFlags(group);
  const value = group.mode === 'n' || group.mode === 'N' ? group.max : true;
  return `${w[group.mode]}: ${value}`;
}

/**
 * At plan time, once flags, job file and stored definition are layered: a group's template must
 * expand to many items (the renderer's own check), and a group with a declared output is
 * refused, since an output is one item's (`{out}` is one path) and a group's command runs many.
 * `what` names the template, `w` the words of the source that gave it.
 */
export function checkGrouping(handler: HandlerSpec | null, hasOutput: boolean, what: string, w: GroupWords): void {
  if (handler?.kind !== 'exec' || !handler.group) return;
  if (!hasOutput) return checkGroupTemplate(handler.template, handler.group.mode, what);
  const words = groupWords(handler.group, w);
  throw new UsageError(wrapError(`${what} with ${words} runs one command for many items, and a declared output (${w.output}, {out}) needs one item per command: drop ${words} or ${w.output}`));
}

/**
 * `--line-buffer` prints each attempt's lines as they come; a group's command is many items'
 * attempts, and runs again in halves when it fails, so its lines are no one attempt's: refused.
 */
export function refuseGroupsLineByLine(settings: { handler: HandlerSpec | null; stages: { handler: HandlerSpec }[] }): void {
  const grouped = [settings.handler, ...settings.stages.map((s) => s.handler)].find((h) => h?.kind === 'exec' && h.group);
  if (grouped?.kind !== 'exec' || !grouped.group) return;
  const words = groupFlags(grouped.group);
  throw new UsageError(wrapError(`--line-buffer prints each task's lines as they come, and with ${words} one command prints many tasks' lines (again, in halves, if it fails): leave out --line-buffer (--print -k prints each command's output whole, in order) or ${words}`));
}
