/** One task per record of a JSON Lines list, read exactly: keys and fields keep every digit as written. */
import { isUtf8 } from 'node:buffer';
import { createHash } from '../crypto-on-use.js';
import { UsageError } from '../errors.js';
import { exactText, JsonDepthError, MAX_RECORD_DEPTH, parseExact, plainJson, type ExactJson } from '../exact-json.js';
import type { TaskSpec } from '../store/task-store.js';
import { keyKind, recordKey } from './item-key.js';
import { listLines } from './list-lines.js';

export { MAX_RECORD_DEPTH };

export interface RecordsMode {
  keyField: string | null;
  /** `--colsep`, carried by each item (see ItemsMode). */
  colsep: string | null;
}

interface ReadRecord {
  spec: TaskSpec;
  lineNo: number;
  kind: 'number' | 'number-text' | null;
}

/**
 * The records of the list at `path`. With a --key-field, a task's fingerprint is a hash of
 * its record (canonical: field order and spacing do not count), so a run can tell that the
 * list's record for a key differs from the one stored (`--rerun-changed`). A number key field
 * keys by its text and a string by its value, so `7` and `"7"` would share the key `7`: a list
 * holding both is exit 2 naming the two lines, never one task for two records.
 */
export function* readRecords(path: string, shown: string, mode: RecordsMode): Generator<TaskSpec> {
  const seen = { number: 0, 'number-text': 0 };
  for (const r of records(path, shown, mode)) {
    if (r.kind !== null) seen[r.kind]++;
    yield r.spec;
  }
  if (seen.number > 0 && seen['number-text'] > 0) checkKeyKinds(path, shown, mode, seen.number <= seen['number-text'] ? 'number' : 'number-text');
}

function* records(path: string, shown: string, mode: RecordsMode): Generator<ReadRecord> {
  for (const { bytes, lineNo } of listLines(path, shown)) {
    if (bytes.length === 0) continue;
    const where = `${placeOf(shown)}, line ${lineNo}`;
    if (!isUtf8(bytes)) throw new UsageError(`${where}: not valid UTF-8, so not JSON; fix that line, or read the list as plain lines (without --jsonl)`);
    const item = bytes.toString('utf8');
    const record = parseRecord(item, where);
    const spec: TaskSpec = {
      key: recordKey(record, mode.keyField, where),
      payload: { version: 1, path: shown, rel: shown, item, record: plainJson(record), ...(mode.colsep === null ? {} : { colsep: mode.colsep }) },
      fingerprint: mode.keyField === null ? null : recordFingerprint(record),
    };
    yield { spec, lineNo, kind: keyKind(record, mode.keyField) };
  }
}

function placeOf(shown: string): string {
  return shown === '-' ? 'stdin' : shown;
}

function parseRecord(item: string, where: string): ExactJson {
  try {
    return parseExact(item, MAX_RECORD_DEPTH);
  } catch (err) {
    if (err instanceof JsonDepthError) {
      throw new UsageError(`${where}: the record nests more than ${MAX_RECORD_DEPTH} levels of objects and arrays; flatten it, or read the list as plain lines (without --jsonl)`);
    }
    throw new UsageError(`${where}: invalid JSON (${(err as Error).message}); fix that line, or read the list as plain lines (without --jsonl)`);
  }
}

/**
 * What a record's task holds, as a hash of its canonical text: the same for the same record
 * however its fields are ordered or spaced. `record:` tells it from a file's `size:mtime`.
 */
function recordFingerprint(record: ExactJson): string {
  return `record:${createHash('sha256').update(exactText(record, true)).digest('hex').slice(0, 32)}`;
}

/**
 * The list keys some records by a number and others by a string written like one: find a key
 * the two kinds share. Reads the list twice more, keeping the keys of the rarer kind only.
 */
function checkKeyKinds(path: string, shown: string, mode: RecordsMode, rarer: 'number' | 'number-text'): void {
  const lines = new Map<string, number>();
  for (const r of records(path, shown, mode)) if (r.kind === rarer && !lines.has(r.spec.key)) lines.set(r.spec.key, r.lineNo);
  for (const r of records(path, shown, mode)) {
    if (r.kind === null || r.kind === rarer) continue;
    const other = lines.get(r.spec.key);
    if (other === undefined) continue;
    const [first, second] = other < r.lineNo ? [other, r.lineNo] : [r.lineNo, other];
    const shownKey = r.spec.key.length > 60 ? `${r.spec.key.slice(0, 60)}…` : r.spec.key;
    throw new UsageError(
      `${placeOf(shown)}, lines ${first} and ${second}: --key-field "${mode.keyField}" is ${shownKey} as a number in one and "${shownKey}" as a string in the other, ` +
        'and both would key one task; make it one type in every record (or leave out --key-field)',
    );
  }
}
