import { basename, dirname, extname } from 'node:path';
import { PermanentError, UsageError } from '../errors.js';
import { ITEM_PLACEHOLDER, type Placeholder } from './placeholder.js';
import { checkPlaceholders } from './placeholder-attempts.js';
import { fieldsOf, itemText, recordField } from './item-values.js';
import { extensionOf, folderOf, nameOf, stemOf, withoutExtension } from './parallel-path.js';
import { shellQuote } from './quoted-line.js';
import type { TemplateTask } from './template-task.js';
import { quoteByContext } from './template-quoting.js';

const INPUT = /\{inputs\.([A-Za-z0-9_-][A-Za-z0-9_.-]*)\}/g;

export { shellQuote };

/**
 * Rejects templates that could never run, or whose placeholders could not be passed
 * exactly (unclosed quotes, a placeholder inside backquotes, a brace text meant as a
 * placeholder that is none…), before any task is written; `what` names where it came from;
 * `needs` (a stage's) are the stages whose results `{inputs.STAGE.FIELD}` may read.
 */
export function checkTemplate(template: string, needs: string[] = [], hasOutput = true, items = true, what = '--exec'): void {
  if (template.trim() === '') throw new UsageError('--exec needs a command, e.g. --exec \'gzip -k {}\'');
  checkPlaceholders(template, what);
  const itemOnly = ITEM_PLACEHOLDER.exec(template);
  if (!items && itemOnly) {
    throw new UsageError(`--exec template: ${itemOnly[0]} is a placeholder of an item, and this source is not a list; give the list with --items FILE (or \`run -\` for stdin)`);
  }
  if (!hasOutput && template.includes('{out}')) {
    throw new UsageError(`the command writes {out}, but no output is declared: add --output (e.g. --output 'out/{rel}.gz'), or "output" in the job file`);
  }
  for (const [, path] of template.matchAll(INPUT)) {
    const stage = path!.split('.')[0]!;
    if (!needs.includes(stage)) {
      throw new UsageError(
        needs.length
          ? `{inputs.${path}} reads stage "${stage}", which this stage does not need (needs: ${needs.join(', ')})`
          : `{inputs.${path}} reads another stage's result; only a stage with "needs" has inputs`,
      );
    }
  }
  quoteByContext(template);
}

/**
 * What a placeholder stands for in one task (SPEC §4), as the command receives it: no
 * quoting here (exec-command.ts puts it in an argument or quotes it for the shell). Unlike
 * GNU parallel, a template without placeholders runs as written (`--exec 'sleep 5'` means
 * just that); the task's path is also in $SPLITDANCE_PATH.
 */
export function placeholderValue({ name, input, field }: Placeholder, task: TemplateTask): string {
  if (input !== undefined) return inputValue(task.inputs, input);
  if (field !== undefined) return recordField(task.payload, field);
  const { path, rel, start, end } = task.payload;
  const fieldForm = name === undefined ? null : /^([1-9][0-9]*)(.*)$/.exec(name);
  if (fieldForm) {
    // `{1}`, and GNU parallel's `{1.}` `{1/}` `{1//}` `{1/.}`: the field read as a path.
    const value = fieldsOf(task.payload)[Number(fieldForm[1]) - 1] ?? '';
    return fieldForm[2] ? itemPath(fieldForm[2], value) : value;
  }
  // An item's path placeholders read the item's text as a path, as GNU parallel does (SPEC §3);
  // the list's own path (`-` for stdin) is never what they mean.
  if (task.payload.item !== undefined && name !== undefined && ITEM_PATH.has(name)) return itemPath(name, itemText(task.payload));
  switch (name) {
    case '':
      // An item's `{}` is the item, as in GNU parallel and rush; a file's is its path.
      return task.payload.item !== undefined ? itemText(task.payload) : path;
    case 'item':
      return itemText(task.payload);
    case 'key':
      return task.key;
    case 'rel':
      return rel;
    case 'name':
    case '/':
      return basename(path);
    case 'stem':
    case '/.':
      return basename(path, extname(path));
    case 'ext':
      return extname(path);
    case 'dir':
    case '//':
      return dirname(path);
    case '.':
      return path.slice(0, path.length - extname(path).length);
    case 'start':
      return start === undefined ? '' : String(start);
    case 'end':
      return end === undefined ? '' : String(end);
    case 'attempt':
      return String(task.attempt);
    case 'batch':
      return task.batch;
    case '#':
      return String(task.seq);
    case '%':
      // The pool numbers every attempt it hands out; only a rendering outside an attempt lacks one.
      if (task.slot === undefined) throw new PermanentError('{%} is the slot an attempt runs in, and this is not an attempt');
      return String(task.slot);
    case 'stage':
      return task.stage;
    case 'out':
      // checkTemplate refuses {out} without a declared output; a stored batch could still lack one.
      if (!task.output) throw new PermanentError('{out} is used but no output is declared (--output); declare one or remove {out}');
      return task.output.temp;
  }
  throw new Error(`no value for the placeholder ${name}`); // PLACEHOLDER matches only the names above
}

/** The path placeholders an item's text answers (`rel`: the item itself, which no source root is above). */
const ITEM_PATH = new Set(['rel', 'name', '/', 'stem', '/.', 'ext', 'dir', '//', '.']);

/** An item's text (or one of its fields) read as a path by a path placeholder, as GNU parallel reads it. */
function itemPath(form: string, text: string): string {
  switch (form) {
    case '.':
      return withoutExtension(text);
    case '/':
    case 'name':
      return nameOf(text);
    case '//':
    case 'dir':
      return folderOf(text);
    case '/.':
    case 'stem':
      return stemOf(text);
    case 'ext':
      return extensionOf(text);
  }
  return text;
}

/**
 * `{inputs.transcode.out}`: a field of a needed stage's stored result, as text (JSON for objects).
 * Only a result's own fields exist — `constructor`, `__proto__`, `toString` are not fields of
 * any result; an array's own fields are its indexes and `length`.
 */
function inputValue(inputs: Record<string, unknown>, path: string): string {
  let value: unknown = inputs;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, part)) {
      throw new PermanentError(`{inputs.${path}}: the needed stage's result has no "${part}" (result: ${JSON.stringify(inputs[path.split('.')[0]!] ?? null)})`);
    }
    value = (value as Record<string, unknown>)[part];
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}
