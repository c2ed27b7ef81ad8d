/** An item's task key: the item itself, readable, and a prefix plus a hash when it is long or not text. */
import { createHash } from '../crypto-on-use.js';
import { UsageError } from '../errors.js';

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
  if (raw === null && !nul && [...text].length <= MAX_ITEM_KEY && !SHORTENED.test(text)) return text;
  const hash = createHash('sha256').update(raw ?? text).digest('hex').slice(0, 16);
  return `${[...text.replaceAll('\0', '\\0')].slice(0, PREFIX).join('')}…${hash}`;
}

/** A JSON record's key: its `keyField` (a string or a number), else its canonical text. */
export function recordKey(record: unknown, keyField: string | null, where: string): string {
  if (keyField === null) return itemKey(canonicalJson(record));
  const value = record !== null && typeof record === 'object' && !Array.isArray(record) && Object.hasOwn(record, keyField) ? (record as Record<string, unknown>)[keyField] : undefined;
  if (typeof value === 'string' && value !== '') return itemKey(value);
  if (typeof value === 'number' && Number.isFinite(value)) return itemKey(String(value));
  throw new UsageError(
    `${where}: the record has no --key-field "${keyField}" that is a non-empty string or a number (got ${value === undefined ? 'none' : excerpt(JSON.stringify(value))}); ` +
      'give every record that field, or leave out --key-field to key records by their whole text',
  );
}

/** A value as shown in a message: at most EXCERPT characters of it, saying how much more there was. */
const EXCERPT = 100;
function excerpt(text: string): string {
  return text.length <= EXCERPT ? text : `${text.slice(0, EXCERPT)}… (${text.length - EXCERPT} characters more)`;
}

/** JSON with object keys sorted at every level, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are one item. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}
