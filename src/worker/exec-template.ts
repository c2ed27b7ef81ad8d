import { basename, dirname, extname } from 'node:path';
import { PermanentError, UsageError } from '../errors.js';
import type { TaskMessage } from './protocol.js';
import { quoteByContext, shellQuote } from './template-quoting.js';

const INPUT = /\{inputs\.([A-Za-z0-9_-][A-Za-z0-9_.-]*)\}/g;

export { shellQuote };

/**
 * Rejects templates that could never run, or whose placeholders could not be passed
 * exactly (unclosed quotes, a placeholder inside backquotes…), before any task is written;
 * `needs` (a stage's) are the stages whose results `{inputs.STAGE.FIELD}` may read.
 */
export function checkTemplate(template: string, needs: string[] = []): void {
  if (template.trim() === '') throw new UsageError('--exec needs a command, e.g. --exec \'gzip -k {}\'');
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
  quoteByContext(template, () => '');
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

/**
 * Renders an `--exec` template for one task. Every substitution is shell-quoted for where
 * it stands (bare, `'…'`, `"…"`; template-quoting.ts), so a file named `a'b $(touch x);.log`
 * is exactly one argument, or part of one, and runs nothing. Unlike GNU parallel,
 * a template without placeholders runs as written (`--exec 'sleep 5'` means just that);
 * the task's path is also in $SPLITDANCE_PATH.
 */
export function renderTemplate(template: string, task: TaskMessage): string {
  const path = task.payload.path;
  const ext = extname(path);
  const values: Record<string, string> = {
    '': path,
    key: task.key,
    rel: task.payload.rel,
    name: basename(path),
    stem: basename(path, ext),
    ext,
    dir: dirname(path),
    start: task.payload.start === undefined ? '' : String(task.payload.start),
    end: task.payload.end === undefined ? '' : String(task.payload.end),
    attempt: String(task.attempt),
    batch: task.batch,
    '.': ext ? path.slice(0, -ext.length) : path,
    '/': basename(path),
    '//': dirname(path),
    '/.': basename(path, ext),
    '#': String(task.seq),
    stage: task.stage,
  };
  try {
    return quoteByContext(template, (_p, name, input) => (input !== undefined ? inputValue(task.inputs, input) : values[name!]!));
  } catch (err) {
    // checkTemplate refuses these before anything is written; a batch stored by an older
    // version may still hold one: no attempt of it can ever run exactly.
    if ((err as Error).name === 'UsageError') throw new PermanentError((err as Error).message);
    throw err;
  }
}
