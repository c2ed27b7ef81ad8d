import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { UsageError } from '../errors.js';
import { printable } from '../printable.js';
import { notReplaceable, replaceFile } from '../replaceable-path.js';

/**
 * The file `run --metrics-file` keeps for node_exporter's textfile collector. It is replaced
 * whole (a temporary file in the same folder, then a rename), so the collector never reads
 * half a file; the temporary name does not end in .prom, so the collector never reads it.
 */

/**
 * Checked when the options are parsed, so a path the run could never write is exit 2 before
 * anything is written: a regular file or nothing (never a folder, a device such as /dev/null,
 * a FIFO or a symlink: the rename would replace it), and the nearest existing folder on its way
 * writable (the missing ones are created at the first write). The store's own files are refused
 * where the store is known (planRun).
 */
export function checkMetricsPath(path: string, what: string): string {
  const fail = (why: string) => new UsageError(`${what} ${printable(path)}: ${why}`);
  const blocked = notReplaceable(path);
  if (blocked === 'a folder') throw fail('is a folder; give a file such as /var/lib/node_exporter/textfile/splitdance.prom');
  if (blocked) throw fail(`is ${blocked}, not a regular file; splitdance replaces only regular files (to keep no metrics, leave out ${what})`);
  let dir = dirname(path);
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  if (!statSync(dir).isDirectory()) throw fail(`${printable(dir)} is not a folder`);
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch {
    throw fail(`the folder ${printable(dir)} is not writable`);
  }
  return path;
}

/** Replaces `path` with `text` atomically, creating its folders (replaceFile: exclusive, never through a symlink). */
export function writeAtomically(path: string, text: string): Promise<void> {
  return replaceFile(path, text, { what: 'the metrics file', makeFolders: true });
}
