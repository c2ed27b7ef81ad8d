import { createHash } from '../crypto-on-use.js';
import { basename } from 'node:path';
import { UsageError } from '../errors.js';
import { printable } from '../printable.js';

/** The default batch name: the source's base name and a hash of its absolute path, so a re-run resumes it. */
export function defaultBatchName(absSource: string): string {
  const hash = createHash('sha256').update(absSource).digest('hex').slice(0, 8);
  const base = basename(absSource).replace(/[^\p{L}\p{N}._-]+/gu, '_') || 'root';
  return `${base}-${hash}`;
}

/**
 * The default batch of a list on stdin: `stdin-` and a hash of the working folder and the
 * handler, so `… | splitdance run - --exec CMD` run again in the same folder resumes it.
 */
export function stdinBatchName(cwd: string, handler: string): string {
  return `stdin-${createHash('sha256').update(`${cwd}\0${handler}`).digest('hex').slice(0, 8)}`;
}

/** Expands `{date}` to the local date, YYYY-MM-DD (for `--batch 'nightly-{date}'`). */
export function expandBatchName(name: string, now = new Date()): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  const date = `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
  return name.replace(/\{date\}/g, date);
}

/**
 * A batch name is text: a NUL cannot reach a command line or a C string intact (every task of
 * such a batch failed with a misleading message), and a lone UTF-16 surrogate is not valid
 * Unicode, so the stores keep something else (the batch was created, then "no longer in the
 * store"). Both are refused before anything is written.
 */
export function checkBatchName(name: string): void {
  const why = name.includes('\0') ? 'a NUL character' : /\p{Surrogate}/u.test(name) ? 'a lone UTF-16 surrogate (not valid Unicode)' : null;
  if (why) throw new UsageError(`the batch name "${printable(name)}" holds ${why}; give --batch (or the job file's "batch") a name of ordinary text`);
}

/**
 * The default batch of items given as `:::` / `::::` groups: `args-` and a hash of the working
 * folder, the handler and the groups' kinds and files (not the values), so the same command
 * with a value added resumes the batch and runs only the new combinations.
 */
export function argsBatchName(cwd: string, handler: string, shape: string): string {
  return `args-${createHash('sha256').update(`${cwd}\0${handler}\0${shape}`).digest('hex').slice(0, 8)}`;
}
