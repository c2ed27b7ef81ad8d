import { basename, dirname, extname } from 'node:path';
import { PermanentError, UsageError } from '../errors.js';
import { ITEM_PLACEHOLDER, type Placeholder } from './placeholder.js';
import { fieldsOf, itemText, recordField } from './item-values.js';
import { shellQuote } from './quoted-line.js';
import type { TemplateTask } from './template-task.js';
import { quoteByContext } from './template-quoting.js';

const INPUT = /\{inputs\.([A-Za-z0-9_-][A-Za-z0-9_.-]*)\}/g;

export { shellQuote };

/**
 * Rejects templates that could never run, or whose placeholders could not be passed
 * exactly (unclosed quotes, a placeholder inside backquotes…), before any task is written;
 * `needs` (a stage's) are the stages whose results `{inputs.STAGE.FIELD}` may read.
 */
export function checkTemplate(template: string, needs: string[] = [], hasOutput = true, items = true): void {
  if (template.trim() === '') throw new UsageError('--exec needs a command, e.g. --exec \'gzip -k {}\'');
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
  if (name !== undefined && /^[1-9]/.test(name)) return fieldsOf(task.payload)[Number(name) - 1] ?? '';
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
    case 'stage':
      return task.stage;
    case 'out':
      // checkTemplate refuses {out} without a declared output; a stored batch could still lack one.
      if (!task.output) throw new PermanentError('{out} is used but no output is declared (--output); declare one or remove {out}');
      return task.output.temp;
  }
  throw new Error(`no value for the placeholder ${name}`); // PLACEHOLDER matches only the names above
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
