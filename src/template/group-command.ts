/**
 * `-n N` / `-N N` / `-X` / `-m` (SPEC §10): one `--exec` command for many items, each value
 * exact, as GNU parallel and xargs put many arguments on one command line.
 *
 * Item placeholders are every placeholder but `{%}`, `{batch}` and `{stage}`, which are the
 * group's (its first task's) and render once; `{#}` and `{attempt}` are each item's. In a
 * simple command (simple-command.ts: no shell) an item placeholder's word becomes:
 * - `-n`, `-m`, `-N`: the values of all items, each its own argument, the word's text around
 *   the placeholder kept at the ends, as parallel's -m: `pic{}.jpg` → `pic1` `2` `3.jpg`;
 *   a word holding two item placeholders or more is repeated per item instead, as `-X`;
 * - `-X`: the word repeated once per item: `pic1.jpg` `pic2.jpg` `pic3.jpg`.
 * Under `-N`, `{1}` … `{N}` (and `{1.}`, `{1/}`, `{1//}`, `{1/.}`) are the group's items 1 … N:
 * what `{}` (`{.}`, `{/}` …) gives for that item, or '' past the group's end; they render once.
 * Under the other modes `{1}` is each item's field 1, like any item placeholder.
 *
 * A template that runs through the shell gets, where an item placeholder stands, the values of
 * all items, each single-quoted, joined by spaces: exact only where that is a word of its own
 * (group-refusals.ts), so any other template is refused at plan time (checkGroupTemplate), and a
 * stored one fails for good (PermanentError) rather than let an item become code. There `-n`,
 * `-m` and `-X` agree. `{out}` is refused: declared outputs need one item per command.
 *
 * Unlike GNU parallel, a template without item placeholders runs as written, once for the
 * group: the items are never appended. A group of one renders as renderExec renders its task
 * (under -n, -m, -X).
 */
import { PermanentError, UsageError } from '../errors.js';
import { compiledExec, type Compiled, type ExecCommand } from './exec-command.js';
import { placeholderValue } from './exec-template.js';
import { holeIsWord, insideWordMessage, outMessage } from './group-refusals.js';
import type { Placeholder } from './placeholder.js';
import { checkPlaceholders } from './placeholder-attempts.js';
import { shellQuote } from './quoted-line.js';
import type { TemplateTask } from './template-task.js';
import { quoteByContext } from './template-quoting.js';

/** How the item placeholders of a template expand for a group (GNU parallel's -n, -N, -X, -m). */
export type GroupMode = 'n' | 'N' | 'X' | 'm';

/** Where a placeholder's value comes from in a group: every item's, the group's (its first task's), or under -N one item's. */
type Source = { of: 'items' } | { of: 'group' } | { of: 'position'; index: number; as: Placeholder };

/** Text, or the slot (into the compiled template's slots) whose value goes there. */
type Part = string | number;

/** A simple command's word, as a group renders it. */
type GroupWord =
  | { how: 'once'; parts: Part[] } // no item placeholder
  | { how: 'spread'; before: Part[]; slot: number; after: Part[] } // one item placeholder, -n -m -N
  | { how: 'repeat'; parts: Part[] }; // -X, or two item placeholders or more

/** A template compiled once for a mode. */
interface GroupForm {
  exec: Compiled;
  sources: Source[];
  /** Whether any placeholder is each item's (without one, the template renders as written, once). */
  perItem: boolean;
  /** The simple command's words, or null when the template runs through the shell. */
  words: GroupWord[] | null;
  /** Why the template cannot run for many items exactly (the message, given where it came from), or null. */
  refusal: ((what: string) => string) | null;
}

/** The placeholders that are the group's, not each item's. */
const GROUP_NAMES = new Set(['%', 'batch', 'stage']);

/** A worker renders a batch's few templates; the bound only guards against a leak. */
const MAX_CACHED = 64;
const cache = new Map<string, GroupForm>();

/** Renders `template` for a group of tasks (at least one), each value exact. */
export function renderGroup(template: string, tasks: TemplateTask[], mode: GroupMode): ExecCommand {
  if (tasks.length === 0) throw new Error('renderGroup needs at least one task');
  const form = cache.get(mode + template) ?? compile(template, mode);
  if (form.refusal) throw new PermanentError(form.refusal('--exec'));
  const values = form.sources.map((source, k) => valueOf(source, form.exec.slots[k]!, tasks));
  if (form.words === null) return { argv: ['/bin/sh', '-c', shellLine(form.exec, values)], fallback: null };
  const argv = wordsOf(form.words, values, tasks.length);
  // With one value for each placeholder the line is renderExec's; otherwise each word is quoted whole.
  return { argv, fallback: tasks.length === 1 || !form.perItem ? shellLine(form.exec, values) : argv.map(shellQuote).join(' ') };
}

/** Refuses (UsageError) a template whose item placeholders cannot expand to many items exactly under `mode`. */
export function checkGroupTemplate(template: string, mode: GroupMode, what: string): void {
  checkPlaceholders(template, what);
  quoteByContext(template);
  const form = cache.get(mode + template) ?? compile(template, mode);
  if (form.refusal) throw new UsageError(form.refusal(what));
}

function valueOf(source: Source, slot: Placeholder, tasks: TemplateTask[]): string | string[] {
  switch (source.of) {
    case 'group':
      return placeholderValue(slot, tasks[0]!);
    case 'position': {
      const task = tasks[source.index - 1];
      return task === undefined ? '' : placeholderValue(source.as, task);
    }
    case 'items':
      return tasks.map((task) => placeholderValue(slot, task));
  }
}

/** The shell line: a group's value quoted, every item's value quoted and joined by spaces where its hole stands. */
function shellLine({ line, lineSlots }: Compiled, values: (string | string[])[]): string {
  let out = line.pieces[0]!;
  for (let h = 0; h < lineSlots.length; h++) {
    const value = values[lineSlots[h]!]!;
    out += (typeof value === 'string' ? shellQuote(value) : value.map(shellQuote).join(' ')) + line.pieces[h + 1]!;
  }
  return out;
}

function wordsOf(words: GroupWord[], values: (string | string[])[], n: number): string[] {
  const argv: string[] = [];
  for (const word of words) {
    if (word.how === 'once') {
      argv.push(textOf(word.parts, values, 0));
    } else if (word.how === 'repeat') {
      for (let i = 0; i < n; i++) argv.push(textOf(word.parts, values, i));
    } else {
      const items = values[word.slot] as string[];
      const before = textOf(word.before, values, 0);
      const after = textOf(word.after, values, 0);
      if (n === 1) {
        argv.push(before + items[0]! + after);
        continue;
      }
      argv.push(before + items[0]!);
      for (let i = 1; i < n - 1; i++) argv.push(items[i]!);
      argv.push(items[n - 1]! + after);
    }
  }
  return argv;
}

/** A word's text for item `i`. */
function textOf(parts: Part[], values: (string | string[])[], i: number): string {
  let text = '';
  for (const part of parts) {
    if (typeof part === 'string') text += part;
    else {
      const value = values[part]!;
      text += typeof value === 'string' ? value : value[i]!;
    }
  }
  return text;
}

function compile(template: string, mode: GroupMode): GroupForm {
  const exec = compiledExec(template);
  const sources = exec.slots.map((slot) => sourceOf(slot, mode));
  const isItem = (part: Part): part is number => typeof part === 'number' && sources[part]!.of === 'items';
  const words = exec.words?.map((parts) => groupWord(parts, mode, isItem)) ?? null;
  const flag = `-${mode}`;
  let refusal: GroupForm['refusal'] = null;
  if (exec.slots.some((slot) => slot.name === 'out')) {
    refusal = (what) => outMessage(what, flag);
  } else if (words === null) {
    const h = exec.lineSlots.findIndex((k, h) => isItem(k) && !holeIsWord(exec.line, h));
    if (h >= 0) refusal = (what) => insideWordMessage(what, flag, template, exec.line.holes[h]!.text, exec.line.from[h]!);
  }
  const form = { exec, sources, perItem: exec.slots.some((_, k) => isItem(k)), words, refusal };
  if (cache.size >= MAX_CACHED) cache.clear();
  cache.set(mode + template, form);
  return form;
}

function sourceOf(slot: Placeholder, mode: GroupMode): Source {
  if (slot.name !== undefined && GROUP_NAMES.has(slot.name)) return { of: 'group' };
  const position = mode === 'N' && slot.name !== undefined ? /^([1-9][0-9]*)(.*)$/.exec(slot.name) : null;
  if (position) {
    // `{2/.}` is what `{/.}` gives for the group's second item.
    const name = position[2]!;
    return { of: 'position', index: Number(position[1]), as: { text: `{${name}}`, name, input: undefined } };
  }
  return { of: 'items' };
}

function groupWord(parts: Part[], mode: GroupMode, isItem: (part: Part) => part is number): GroupWord {
  const items = parts.filter(isItem);
  if (items.length === 0) return { how: 'once', parts };
  if (mode === 'X' || items.length > 1) return { how: 'repeat', parts };
  const at = parts.findIndex(isItem);
  return { how: 'spread', before: parts.slice(0, at), slot: items[0]!, after: parts.slice(at + 1) };
}
