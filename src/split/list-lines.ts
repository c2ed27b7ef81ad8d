/** The lines of a list file (or its items between a `-0`/`-d` delimiter), read a block at a time, each at most MAX_ITEM_BYTES. */
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
const NEWLINE = Buffer.from('\n');
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
 *
 * With a `delimiter` (`-0`, `-d`: its exact bytes, one or more), the items are what lies
 * between delimiters, exactly (a CR is kept, a newline is part of the item); a delimiter at the
 * very end makes no empty item after it. Messages then name an item by its number.
 */
export function* listLines(path: string, shown: string, delimiter: Buffer | null = null): Generator<ListLine> {
  const delim = delimiter ?? NEWLINE;
  const stripCr = delimiter === null;
  // One byte is searched for as a number: the common case (lines, -0) keeps its speed.
  const needle: Buffer | number = delim.length === 1 ? delim[0]! : delim;
  const fd = openSync(path, 'r');
  let lineNo = 0;
  const unit = delimiter === null ? 'line' : 'item';
  // The CR a line may end with is not part of it: one byte over is not yet too long.
  const limit = MAX_ITEM_BYTES + (stripCr ? 1 : 0);
  try {
    const block = Buffer.allocUnsafe(BLOCK);
    let carry: Buffer[] = [];
    let carried = 0;
    // The last bytes of an unfinished item that may begin a delimiter split across two blocks.
    let tail: Buffer = Buffer.alloc(0);
    for (let pos = 0; ; ) {
      const n = readSync(fd, block, 0, BLOCK, pos);
      if (n === 0) break;
      pos += n;
      const buf = tail.length ? Buffer.concat([tail, block.subarray(0, n)]) : block.subarray(0, n);
      tail = Buffer.alloc(0);
      let from = 0;
      for (let i = buf.indexOf(needle, 0); i >= 0; i = buf.indexOf(needle, from)) {
        const piece = buf.subarray(from, i);
        lineNo++;
        if (carried + piece.length > limit) tooLong(shown, lineNo, unit);
        const whole = carry.length ? Buffer.concat([...carry, piece]) : Buffer.from(piece);
        yield { bytes: checked(stripCr ? withoutCr(whole) : whole, shown, lineNo, unit), lineNo };
        carry = [];
        carried = 0;
        from = i + delim.length;
      }
      if (from < buf.length) {
        // Keep back what could be the start of a delimiter that the next block completes.
        const keep = Math.min(delim.length - 1, buf.length - from);
        const upTo = buf.length - keep;
        if (upTo > from) {
          carried += upTo - from;
          if (carried > limit) tooLong(shown, lineNo + 1, unit);
          carry.push(Buffer.from(buf.subarray(from, upTo)));
        }
        tail = Buffer.from(buf.subarray(upTo));
      }
    }
    if (tail.length) carry.push(tail);
    if (carry.length) {
      const whole = Buffer.concat(carry);
      yield { bytes: checked(stripCr ? withoutCr(whole) : whole, shown, lineNo + 1, unit), lineNo: lineNo + 1 };
    }
  } finally {
    closeSync(fd);
  }
}

function checked(line: Buffer, shown: string, lineNo: number, unit: string): Buffer {
  if (line.length > MAX_ITEM_BYTES) tooLong(shown, lineNo, unit);
  return line;
}

/** A line over the limit: exit 2 naming it, before anything is written (the list is read before the store changes). */
function tooLong(shown: string, lineNo: number, unit: string): never {
  throw new UsageError(
    `${shown === '-' ? 'stdin' : shown}, ${unit} ${lineNo}: the item is longer than ${formatBytes(MAX_ITEM_BYTES)}, the limit of one item; ` +
      'put big data in a file and list its path, or split the file itself as a source (run FILE)',
  );
}

function withoutCr(line: Buffer): Buffer {
  return line.length && line[line.length - 1] === CR ? line.subarray(0, line.length - 1) : line;
}
