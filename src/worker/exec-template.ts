import { basename, dirname, extname } from 'node:path';
import { UsageError } from '../errors.js';
import type { TaskMessage } from './protocol.js';

const PLACEHOLDER = /\{(key|rel|name|stem|ext|dir|start|end|attempt|batch|\/\/|\/\.|\/|\.|#|)\}/g;

/** Single-quotes a value for /bin/sh: nothing inside is expanded, newlines included. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Rejects templates that could never run, before any task is written. */
export function checkTemplate(template: string): void {
  if (template.trim() === '') throw new UsageError('--exec needs a command, e.g. --exec \'gzip -k {}\'');
}

/**
 * Renders an `--exec` template for one task. Every substitution is shell-quoted, so a
 * file named `a'b $(touch x);.log` is one argument and runs nothing. Unlike GNU parallel,
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
  };
  return template.replace(PLACEHOLDER, (_m, name: string) => shellQuote(values[name]!));
}
