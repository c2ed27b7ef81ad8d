/** What the placeholders of an item stand for: its text, its fields, a record's own fields. */
import { PermanentError } from '../errors.js';
import { exactText, JsonNumber, MAX_RECORD_DEPTH, parseExact, type ExactJson } from '../exact-json.js';
import { linearRegExp, SPLIT_BUDGET_MS, splitWithin } from '../linear-regex.js';
import type { TaskPayload } from '../store/task-store.js';

/**
 * The item's text. One that is not valid UTF-8 cannot be an argument exactly (arguments are
 * text here), so its attempt fails for good and says how to get its bytes.
 */
export function itemText(payload: TaskPayload): string {
  if (payload.item === undefined) throw new PermanentError('{item} is used, but this task is not an item of a list; use {} for its path');
  if (payload.bytes !== undefined) {
    throw new PermanentError(`the item ${JSON.stringify(payload.item).slice(0, 100)} is not valid UTF-8, so {} or {item} cannot pass it exactly; use --pipe to get its bytes on stdin`);
  }
  return payload.item;
}

/**
 * An item's `--colsep`, compiled for the linear-time engine once per pattern. One stored by an
 * older version that the engine cannot take fails the attempt for good, saying why.
 */
function colsepPattern(source: string): RegExp {
  let re = colseps.get(source);
  if (re === undefined) {
    try {
      re = linearRegExp(source);
    } catch (err) {
      throw new PermanentError(`--colsep ${JSON.stringify(source)}: ${(err as Error).message}`);
    }
    if (colseps.size >= 64) colseps.clear();
    colseps.set(source, re);
  }
  return re;
}
const colseps = new Map<string, RegExp>();

/**
 * `{1}`, `{2}`…: the values of `:::` groups, or the item split on its `--colsep` regex, or on
 * runs of whitespace (leading and trailing ignored).
 */
export function fieldsOf(payload: TaskPayload): string[] {
  const text = itemText(payload);
  // Values of `:::` groups are the fields themselves, each split again only on a --colsep.
  if (payload.args !== undefined) return payload.colsep === undefined ? payload.args : payload.args.flatMap((v) => splitOn(v, payload.colsep!));
  if (payload.colsep !== undefined) return splitOn(text, payload.colsep);
  const trimmed = text.trim();
  return trimmed === '' ? [] : trimmed.split(/\s+/);
}

function splitOn(text: string, colsep: string): string[] {
  const fields = splitWithin(text, colsepPattern(colsep), SPLIT_BUDGET_MS);
  if (fields === null) {
    throw new PermanentError(`--colsep ${JSON.stringify(colsep)}: took over ${SPLIT_BUDGET_MS / 1000} s to split this item of ${text.length} characters (each field's search reads far ahead); use a simpler separator`);
  }
  return fields;
}

/**
 * `{item.id}`, `{item.user.name}`: a JSON record's own field, as text exactly as the list wrote
 * it (a number's own digits, `12345678901234567891` or `7.0`; compact JSON for objects and
 * arrays). Read from the item's text, which the payload keeps as the line held it (its parsed
 * `record` has a JS number's precision). Like `{inputs…}`, `constructor` or `__proto__` are no
 * record's fields.
 */
export function recordField(payload: TaskPayload, path: string): string {
  if (payload.record === undefined) throw new PermanentError(`{item.${path}} reads a field of a JSON record; this task's item is not one (read the list with --jsonl)`);
  let value = exactRecord(payload);
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || value instanceof JsonNumber || !Object.hasOwn(value, part)) {
      throw new PermanentError(`{item.${path}}: the record has no "${part}" (record: ${(payload.item ?? JSON.stringify(payload.record)).slice(0, 200)})`);
    }
    value = (value as Record<string, ExactJson>)[part]!;
  }
  return typeof value === 'string' ? value : exactText(value);
}

/** The record read from the item's text; a payload without one (none is written so) gives its parsed record. */
export function exactRecord(payload: TaskPayload): ExactJson {
  if (payload.item !== undefined) {
    try {
      return parseExact(payload.item, MAX_RECORD_DEPTH);
    } catch {
      // Not a record's text: the parsed record is all there is.
    }
  }
  return payload.record as ExactJson;
}
