/** One task per line of a list (or record of a JSON Lines file), keyed by the item itself (SPEC §3). */
import { isUtf8 } from 'node:buffer';
import { closeSync, openSync, readSync } from 'node:fs';
import { UsageError } from '../errors.js';
import type { TaskSpec } from '../store/task-store.js';
import { itemKey, recordKey } from './item-key.js';

/** How a list is read: plain lines, or JSON Lines keyed by a field (or by the record's canonical text). */
export interface ItemsMode {
  format: 'lines' | 'jsonl';
  keyField: string | null;
  /** `--colsep`: the regex source that splits an item into `{1}`, `{2}`…; null: whitespace. */
  colsep: string | null;
}

const BLOCK = 1 << 20;
/**
 * How deep a JSON Lines record may nest (objects and arrays). Keying, storing and handing a
 * record to a worker walk it recursively; 5,000 levels overflowed the stack (exit 70). Real
 * records nest a few levels; a deeper one is refused, naming its line.
 */
export const MAX_RECORD_DEPTH = 100;
const NEWLINE = 0x0a;
const CR = 0x0d;

/**
 * The items of the list at `path`, read a block at a time (memory holds one block and one
 * line, however long the list). `shown` is the path written in payloads and messages (`-` for
 * stdin, whose bytes were spooled to `path`). Empty lines are skipped; a CR before the LF is
 * not part of the item. A line that is not valid UTF-8 keeps its exact bytes (`bytes`, base64).
 */
export function* readItems(path: string, shown: string, mode: ItemsMode): Generator<TaskSpec> {
  let lineNo = 0;
  for (const line of listLines(path)) {
    lineNo++;
    if (line.length === 0) continue;
    if (mode.format === 'jsonl') {
      yield jsonItem(line, lineNo, shown, mode);
      continue;
    }
    const valid = isUtf8(line);
    const item = line.toString('utf8');
    yield {
      key: itemKey(item, valid ? null : line),
      payload: { version: 1, path: shown, rel: shown, item, ...(valid ? {} : { bytes: line.toString('base64') }), ...colsepOf(mode) },
      fingerprint: null,
    };
  }
}

/** The item carries its `--colsep`, so whoever runs it (a worker elsewhere) splits it the same way. */
function colsepOf(mode: ItemsMode): { colsep?: string } {
  return mode.colsep === null ? {} : { colsep: mode.colsep };
}

function jsonItem(line: Buffer, lineNo: number, shown: string, mode: ItemsMode): TaskSpec {
  const where = `${shown === '-' ? 'stdin' : shown}, line ${lineNo}`;
  if (!isUtf8(line)) throw new UsageError(`${where}: not valid UTF-8, so not JSON; fix that line, or read the list as plain lines (without --jsonl)`);
  const item = line.toString('utf8');
  let record: unknown;
  try {
    record = JSON.parse(item);
  } catch (err) {
    throw new UsageError(`${where}: invalid JSON (${(err as Error).message}); fix that line, or read the list as plain lines (without --jsonl)`);
  }
  if (depthOver(record, MAX_RECORD_DEPTH)) {
    throw new UsageError(`${where}: the record nests more than ${MAX_RECORD_DEPTH} levels of objects and arrays; flatten it, or read the list as plain lines (without --jsonl)`);
  }
  return { key: recordKey(record, mode.keyField, where), payload: { version: 1, path: shown, rel: shown, item, record, ...colsepOf(mode) }, fingerprint: null };
}

/** Whether `value` nests objects and arrays more than `max` levels deep (walked without recursion). */
function depthOver(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth + 1 > max) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/** The lines of a file without their `\n` (nor a `\r` before it); a last line without `\n` counts. */
function* listLines(path: string): Generator<Buffer> {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(BLOCK);
    let carry: Buffer[] = [];
    for (let pos = 0; ; ) {
      const n = readSync(fd, buf, 0, BLOCK, pos);
      if (n === 0) break;
      pos += n;
      let from = 0;
      for (let i = buf.indexOf(NEWLINE, 0); i >= 0 && i < n; i = buf.indexOf(NEWLINE, from)) {
        const piece = buf.subarray(from, i);
        yield withoutCr(carry.length ? Buffer.concat([...carry, piece]) : Buffer.from(piece));
        carry = [];
        from = i + 1;
      }
      if (from < n) carry.push(Buffer.from(buf.subarray(from, n)));
    }
    if (carry.length) yield withoutCr(Buffer.concat(carry));
  } finally {
    closeSync(fd);
  }
}

function withoutCr(line: Buffer): Buffer {
  return line.length && line[line.length - 1] === CR ? line.subarray(0, line.length - 1) : line;
}
