/** The lines of a list file, read a block at a time, each at most MAX_ITEM_BYTES. */
import { closeSync, openSync, readSync } from 'node:fs';
import { UsageError } from '../errors.js';
import { formatBytes } from '../stored-text.js';

/**
 * The most bytes one item (a line of a list, a JSON Lines record) may have. An item is stored
 * with its task, read back and handed to a worker on every attempt, and parsed whole: 16 MiB
 * keeps each of those a few times its size, however long a line the list holds (a 600 MiB
 * line cannot even be a JS string). Big data belongs in a file whose path is the item.
 */
export const MAX_ITEM_BYTES = 16 * 1024 * 1024;

const BLOCK = 1 << 20;
const NEWLINE = 0x0a;
const CR = 0x0d;

/** A line of a list: its bytes without `\n` (nor a `\r` before it), and its number from 1. */
export interface ListLine {
  bytes: Buffer;
  lineNo: number;
}

/**
 * The lines of the file at `path`; a last line without `\n` counts. Memory holds one block and
 * one line; a line longer than MAX_ITEM_BYTES is refused as soon as it gets there, naming its
 * line (`shown` is the list as messages name it, `-` for stdin), never read whole.
 */
export function* listLines(path: string, shown: string): Generator<ListLine> {
  const fd = openSync(path, 'r');
  let lineNo = 0;
  try {
    const buf = Buffer.allocUnsafe(BLOCK);
    let carry: Buffer[] = [];
    let carried = 0;
    for (let pos = 0; ; ) {
      const n = readSync(fd, buf, 0, BLOCK, pos);
      if (n === 0) break;
      pos += n;
      let from = 0;
      for (let i = buf.indexOf(NEWLINE, 0); i >= 0 && i < n; i = buf.indexOf(NEWLINE, from)) {
        const piece = buf.subarray(from, i);
        lineNo++;
        if (carried + piece.length > MAX_ITEM_BYTES + 1) tooLong(shown, lineNo);
        yield { bytes: checked(withoutCr(carry.length ? Buffer.concat([...carry, piece]) : Buffer.from(piece)), shown, lineNo), lineNo };
        carry = [];
        carried = 0;
        from = i + 1;
      }
      if (from < n) {
        carried += n - from;
        // The CR a line may end with is not part of it: one byte over is not yet too long.
        if (carried > MAX_ITEM_BYTES + 1) tooLong(shown, lineNo + 1);
        carry.push(Buffer.from(buf.subarray(from, n)));
      }
    }
    if (carry.length) {
      yield { bytes: checked(withoutCr(Buffer.concat(carry)), shown, lineNo + 1), lineNo: lineNo + 1 };
    }
  } finally {
    closeSync(fd);
  }
}

function checked(line: Buffer, shown: string, lineNo: number): Buffer {
  if (line.length > MAX_ITEM_BYTES) tooLong(shown, lineNo);
  return line;
}

/** A line over the limit: exit 2 naming it, before anything is written (the list is read before the store changes). */
function tooLong(shown: string, lineNo: number): never {
  throw new UsageError(
    `${shown === '-' ? 'stdin' : shown}, line ${lineNo}: the item is longer than ${formatBytes(MAX_ITEM_BYTES)}, the limit of one item; ` +
      'put big data in a file and list its path, or split the file itself as a source (run FILE)',
  );
}

function withoutCr(line: Buffer): Buffer {
  return line.length && line[line.length - 1] === CR ? line.subarray(0, line.length - 1) : line;
}
