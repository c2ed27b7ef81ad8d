import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { UsageError } from '../errors.js';
import { printable } from '../printable.js';

/**
 * The file `run --metrics-file` keeps for node_exporter's textfile collector. It is replaced
 * whole (a temporary file in the same folder, then a rename), so the collector never reads
 * half a file; the temporary name does not end in .prom, so the collector never reads it.
 */

/**
 * Checked when the options are parsed, so a path the run could never write is exit 2 before
 * anything is written: not a folder, and the nearest existing folder on its way writable
 * (the missing ones are created at the first write).
 */
export function checkMetricsPath(path: string, what: string): string {
  const fail = (why: string) => new UsageError(`${what} ${printable(path)}: ${why}`);
  if (existsSync(path) && statSync(path).isDirectory()) throw fail('is a folder; give a file such as /var/lib/node_exporter/textfile/splitdance.prom');
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

/** Replaces `path` with `text` atomically, creating its folders. */
export async function writeAtomically(path: string, text: string): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const temp = join(dir, `.${basename(path)}.${process.pid}.tmp`);
  try {
    await writeFile(temp, text);
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw err;
  }
}
