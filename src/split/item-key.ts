/** An item's task key: the item itself, readable, and a prefix plus a hash when it is long or not text. */
import { createHash } from '../crypto-on-use.js';
import { UsageError } from '../errors.js';
import { exactText, JsonNumber, type ExactJson } from '../exact-json.js';

/** Keys up to this many characters are the item as written; longer ones are shortened. */
export const MAX_ITEM_KEY = 200;
/** What a shortened key keeps of the item before `…` and the hash. */
const PREFIX = 160;

/** How a shortened key ends: `…` and 16 hex digits. */
const SHORTENED = /…[0-9a-f]{16}$/;

/**
 * The key of an item whose text is `text`. A longer one keeps its first characters, then `…`
 * and 16 hex digits of the SHA-256 of its exact bytes, so two long items that share a prefix
 * stay two keys; so does a line that is not valid UTF-8 (`raw`), whose text lost bytes. A short
 * item that itself ends like a shortened key is shortened too (its own hash), so no item can
 * take a long item's key and have it dropped as repeated.
 */
export function itemKey(text: string, raw: Buffer | null = null): string {
  // A NUL cannot be stored in a PostgreSQL text column: such a key shows it as \0, plus the hash.
  const nul = text.includes('\0');
  if (raw === null && !nul && !longer(text, MAX_ITEM_KEY) && !SHORTENED.test(text)) return text;
  const hash = createHash('sha256').update(raw ?? text).digest('hex').slice(0, 16);
  return `${prefix(text.replaceAll('\0', '\\0'), PREFIX)}…${hash}`;
}

/** Whether `text` has more than `max` characters (code points), read no further than needed. */
function longer(text: string, max: number): boolean {
  if (text.length <= max) return false;
  // A character is one or two UTF-16 units: only a text of up to 2 × max units needs counting.
  return text.length > 2 * max || [...text].length > max;
}

/** The first `count` characters (code points) of `text`, without reading the rest of it. */
function prefix(text: string, count: number): string {
  let end = 0;
  for (let n = 0; n < count && end < text.length; n++) end += (text.codePointAt(end) ?? 0) > 0xffff ? 2 : 1;
  return text.slice(0, end);
}

/** The --key-field of a record, undefined when it has none (or is not an object). */
function fieldOf(record: ExactJson, keyField: string): ExactJson | undefined {
  return record !== null && typeof record === 'object' && !Array.isArray(record) && !(record instanceof JsonNumber) && Object.hasOwn(record, keyField) ? record[keyField] : undefined;
}

/**
 * A JSON record's key: its `keyField` (a string is its value, a number as below), else its
 * canonical text (fields sorted, numbers as below). A number keys as JavaScript writes it
 * whenever that is exactly its value (`7`, `7.0` and `7.00` are `7`; `1e2` is `100`): as every
 * earlier version keyed it, so their batches resume. One a JS number would round
 * (`12345678901234567891`) keys by its own digits, so two 64-bit ids never share a key.
 */
export function recordKey(record: ExactJson, keyField: string | null, where: string): string {
  if (keyField === null) return itemKey(keyText(record));
  const value = fieldOf(record, keyField);
  if (typeof value === 'string' && value !== '') return itemKey(value);
  if (typeof value === 'number' || value instanceof JsonNumber) return itemKey(numberKey(value));
  throw new UsageError(
    `${where}: the record has no --key-field "${keyField}" that is a non-empty string or a number (got ${value === undefined ? 'none' : excerpt(exactText(value))}); ` +
      'give every record that field, or leave out --key-field to key records by their whole text',
  );
}

/** JSON's number grammar: a string field written like this can share its key with a number field. */
const NUMBER_TEXT = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/**
 * Whether a record's key came from a number, or from a string that could be a number's text
 * (`"7"` and `7` both key as `7`): a list holding both kinds is checked for such a pair.
 */
export function keyKind(record: ExactJson, keyField: string | null): 'number' | 'number-text' | null {
  if (keyField === null) return null;
  const value = fieldOf(record, keyField);
  if (typeof value === 'number' || value instanceof JsonNumber) return 'number';
  return typeof value === 'string' && NUMBER_TEXT.test(value) ? 'number-text' : null;
}

/** A value as shown in a message: at most EXCERPT characters of it, saying how much more there was. */
const EXCERPT = 100;
function excerpt(text: string): string {
  return text.length <= EXCERPT ? text : `${text.slice(0, EXCERPT)}… (${text.length - EXCERPT} characters more)`;
}

/** JSON with object keys sorted at every level, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are one item. */
export function canonicalJson(value: ExactJson): string {
  return exactText(value, true);
}

/** A record's canonical text for its key: fields sorted at every level, numbers by numberKey. */
function keyText(value: ExactJson): string {
  if (value instanceof JsonNumber || typeof value === 'number') return numberKey(value);
  if (Array.isArray(value)) return `[${value.map(keyText).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((f) => `${JSON.stringify(f)}:${keyText(value[f]!)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** A number as JavaScript writes it when that is exactly the value written, else as written. */
function numberKey(value: number | JsonNumber): string {
  if (typeof value === 'number') return String(value);
  const n = Number(value.source);
  const back = String(n);
  return Number.isFinite(n) && decimal(back) === decimal(value.source) ? back : value.source;
}

/** A decimal number's value as text: its significant digits and the power of ten after them (`-0` is `0`). */
function decimal(text: string): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (m === null) return text;
  const digits = `${m[2]}${m[3] ?? ''}`;
  const significant = digits.replace(/^0+/, '');
  if (significant === '') return '0';
  const trimmed = significant.replace(/0+$/, '');
  const exponent = Number(m[4] ?? 0) - (m[3]?.length ?? 0) + (significant.length - trimmed.length);
  return `${m[1]}${trimmed}e${exponent}`;
}
