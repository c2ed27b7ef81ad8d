/** A list on stdin, copied to a private temporary file so it can be read more than once. */
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { UsageError } from '../errors.js';

/**
 * Copies stdin to a file in a new 0700 folder, removed when this process exits, and returns
 * its path. Planning reads a source more than once (the output check, `--dry-run`, the
 * enqueue), and stdin can be read only once; the copy streams, so memory stays flat. The
 * items themselves are stored with their tasks: nothing reads this file after the enqueue.
 */
export async function spoolStdin(stdin: NodeJS.ReadStream = process.stdin): Promise<string> {
  if (stdin.isTTY) throw new UsageError('`run -` reads a list from stdin, which is a terminal here; pipe one in (`ls | splitdance run - --exec …`) or give --items FILE');
  const dir = mkdtempSync(join(tmpdir(), 'splitdance-stdin-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'items');
  await pipeline(stdin, createWriteStream(path, { mode: 0o600, flags: 'wx' }));
  return path;
}
