/** One task per line of a list (or record of a JSON Lines file), keyed by the item itself (SPEC §3). */
import { isUtf8 } from 'node:buffer';
import type { TaskSpec } from '../store/task-store.js';
import { itemKey } from './item-key.js';
import { listLines } from './list-lines.js';
import { readRecords } from './records.js';

export { MAX_ITEM_BYTES } from './list-lines.js';
export { MAX_RECORD_DEPTH } from './records.js';

/**
 * How a list is read: plain lines, or JSON Lines keyed by a field (or by the record's canonical
 * text); or, for stdin with `--pipe` (`run - --pipe`), blocks of lines (stdin-blocks.ts).
 */
export interface ItemsMode {
  format: 'lines' | 'jsonl' | 'blocks';
  keyField: string | null;
  /** `--colsep`: the regex source that splits an item into `{1}`, `{2}`…; null: whitespace. */
  colsep: string | null;
  /**
   * `-0` / `-d DELIM`: the text between two items (`\0` for -0), exact; absent: lines (a CR
   * before the LF is not part of an item). Stored only when given, so older batches compare equal.
   */
  delimiter?: string;
}

/** The bytes that separate the items of a list read in `mode`: null for lines. */
export function delimiterBytes(mode: { delimiter?: string }): Buffer | null {
  return mode.delimiter === undefined ? null : Buffer.from(mode.delimiter, 'utf8');
}

/**
 * The items of the list at `path`, read a block at a time (memory holds one block and one
 * line, however long the list). `shown` is the path written in payloads and messages (`-` for
 * stdin, whose bytes were spooled to `path`). Empty lines are skipped; a CR before the LF is
 * not part of the item. A line that is not valid UTF-8 keeps its exact bytes (`bytes`, base64).
 * A line longer than MAX_ITEM_BYTES is exit 2 naming it. With a delimiter (`-0`, `-d`) the
 * items are what lies between two, exactly (listLines).
 */
export function* readItems(path: string, shown: string, mode: ItemsMode): Generator<TaskSpec> {
  if (mode.format === 'jsonl') {
    yield* readRecords(path, shown, mode);
    return;
  }
  for (const { bytes: line } of listLines(path, shown, delimiterBytes(mode))) {
    if (line.length === 0) continue;
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
