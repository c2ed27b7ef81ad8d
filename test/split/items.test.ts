import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalJson, itemKey, MAX_ITEM_KEY, recordKey } from '../../src/split/item-key.js';
import { MAX_ITEM_BYTES, MAX_RECORD_DEPTH, readItems, type ItemsMode } from '../../src/split/items.js';
import { UsageError } from '../../src/errors.js';

const LINES: ItemsMode = { format: 'lines', keyField: null, colsep: null };

function itemsOf(bytes: Buffer | string, mode = LINES) {
  const path = join(mkdtempSync(join(tmpdir(), 'sd-items-')), 'list');
  writeFileSync(path, bytes);
  return [...readItems(path, path, mode)];
}

describe('readItems', () => {
  it('cuts lines at \\n only, drops one CR before it and skips empty lines; a last line without \\n counts', () => {
    expect(itemsOf('a\r\nb\n\n\r\n c \r\r\nlast').map((s) => s.payload.item)).toEqual(['a', 'b', ' c \r', 'last']);
  });

  it('keeps a line that spans the reading blocks (1 MiB) whole', () => {
    const long = 'z'.repeat((1 << 20) + 17);
    const got = itemsOf(`x\n${long}\ny\n`);
    expect(got.map((s) => s.payload.item!.length)).toEqual([1, long.length, 1]);
  });

  it('keeps the exact bytes of a line that is not UTF-8, under a key of its own', () => {
    const [a, b] = itemsOf(Buffer.from([0xff, 0x0a, 0xfe, 0x0a]));
    expect(Buffer.from(a!.payload.bytes!, 'base64')).toEqual(Buffer.from([0xff]));
    expect(a!.key).not.toBe(b!.key);
  });

  it('parses JSON Lines; the key is the field, or the canonical record', () => {
    const [r1, r2] = itemsOf('{"b":2,"a":1}\n{"a":1,"b":2}\n', { format: 'jsonl', keyField: null, colsep: null });
    expect(r1!.key).toBe('{"a":1,"b":2}');
    expect(r2!.key).toBe(r1!.key);
    expect(() => itemsOf('{"id":1}\n[1]\n', { format: 'jsonl', keyField: 'id', colsep: null })).toThrow(/line 2: the record has no --key-field "id"/);
  });
});

describe('itemKey', () => {
  it('is the item up to the limit, then a prefix plus a hash that tells apart items sharing the prefix', () => {
    expect(itemKey('a'.repeat(MAX_ITEM_KEY))).toBe('a'.repeat(MAX_ITEM_KEY));
    const one = itemKey('a'.repeat(300) + '1');
    const two = itemKey('a'.repeat(300) + '2');
    expect(one).toMatch(/^a{160}…[0-9a-f]{16}$/);
    expect(one).not.toBe(two);
    expect(itemKey('a\0b')).toMatch(/^a\\0b…[0-9a-f]{16}$/);
  });

  it('counts characters, not UTF-16 units, and never cuts a character in half', () => {
    const key = itemKey('🙂'.repeat(250));
    expect([...key.split('…')[0]!]).toHaveLength(160);
  });

  it('canonical JSON sorts keys at every level', () => {
    expect(canonicalJson({ b: [{ d: 1, c: 2 }], a: null })).toBe('{"a":null,"b":[{"c":2,"d":1}]}');
    expect(recordKey({ id: 7 }, 'id', 'x')).toBe('7');
  });
});

describe('JSON Lines records that are too deep or keyed by a huge value (audit 4, item 17)', () => {
  const JSONL: ItemsMode = { format: 'jsonl', keyField: null, colsep: null };

  it('refuses a record nested deeper than MAX_RECORD_DEPTH with a usage error naming its line, and takes one at the limit', () => {
    const nest = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
    expect(itemsOf(`${nest(MAX_RECORD_DEPTH)}\n`, JSONL)).toHaveLength(1);
    expect(() => itemsOf(`{"ok":1}\n${nest(5000)}\n`, JSONL)).toThrow(UsageError);
    expect(() => itemsOf(`{"ok":1}\n[${nest(MAX_RECORD_DEPTH)}]\n`, JSONL)).toThrow(/line 2: the record nests more than 100 levels/);
  });

  it('shows at most an excerpt of a wrong-typed --key-field value', () => {
    const big = { id: { x: 'y'.repeat(5_000_000) } };
    let message = '';
    try {
      recordKey(big, 'id', 'list, line 1');
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/^list, line 1: the record has no --key-field "id"/);
    expect(message).toMatch(/characters more\)/);
    expect(message.length).toBeLessThan(600);
  });
});

describe('shortened keys (audit 4, item 15)', () => {
  it('a short item written like a long item\'s shortened key gets a key of its own: both stay tasks', () => {
    const long = 'x'.repeat(MAX_ITEM_KEY + 50);
    const shortened = itemKey(long);
    expect(shortened).toMatch(/…[0-9a-f]{16}$/);
    const got = itemsOf(`${long}\n${shortened}\n`);
    expect(got.map((s) => s.payload.item)).toEqual([long, shortened]);
    expect(new Set(got.map((s) => s.key)).size).toBe(2);
    // Ordinary short items are still their own key.
    expect(itemKey('report…2025.csv')).toBe('report…2025.csv');
  });
});

/** A parsed JSON value with the fields of every object sorted, as earlier versions keyed records. */
function sortFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortFields);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortFields((value as Record<string, unknown>)[k])]));
}

describe('JSON Lines read exactly (audit 4, item 3)', () => {
  const BY_ID: ItemsMode = { format: 'jsonl', keyField: 'id', colsep: null };

  it('two 64-bit ids that one double would hold are two tasks, each keyed and stored with its own digits', () => {
    const got = itemsOf('{"id":12345678901234567891}\n{"id":12345678901234567892}\n{"id":7}\n{"id":"abc"}\n{"id":7.0}\n', BY_ID);
    // 7.0 is 7, exactly: it keys as every earlier version keyed it, so their batches resume.
    expect(got.map((s) => s.key)).toEqual(['12345678901234567891', '12345678901234567892', '7', 'abc', '7']);
    expect(got[0]!.payload.record).toEqual({ id: '12345678901234567891' });
    expect(got[2]!.payload.record).toEqual({ id: 7 });
    // Without --key-field, the canonical text keeps the digits too.
    const whole = itemsOf('{"id":12345678901234567891}\n{"id":12345678901234567892}\n', { ...BY_ID, keyField: null });
    expect(whole.map((s) => s.key)).toEqual(['{"id":12345678901234567891}', '{"id":12345678901234567892}']);
  });

  it('keys every number an earlier version could read exactly as that version did, so its batches resume', () => {
    // Earlier versions keyed a record by JSON.parse, then its canonical text: 2.50 was 2.5, 1.0
    // was 1, 1e2 was 100, -0 was 0. Only the numbers a double rounds key by their own digits.
    const lines = ['{"sku":"x","price":2.50,"qty":1.0}', '{"n":1e2,"z":-0,"f":1.5e-7,"s":0.1}', '{"big":12345678901234567891}', '{"huge":1e400}'];
    const legacy = (line: string) => JSON.stringify(sortFields(JSON.parse(line)));
    const keys = itemsOf(`${lines.join('\n')}\n`, { ...BY_ID, keyField: null }).map((s) => s.key);
    expect(keys.slice(0, 2)).toEqual(lines.slice(0, 2).map(legacy));
    expect(keys.slice(2)).toEqual(['{"big":12345678901234567891}', '{"huge":1e400}']);
    const byId = itemsOf('{"id":7.00}\n{"id":1e2}\n{"id":-0}\n', BY_ID).map((s) => s.key);
    expect(byId).toEqual(['7', '100', '0']);
  });

  it('"7" and 7 would share the key 7: exit 2 naming both lines, never one task for two records', () => {
    expect(() => itemsOf('{"id":"7"}\n{"id":"x"}\n\n{"id":7}\n', BY_ID)).toThrow(/list, lines 1 and 4: --key-field "id" is 7 as a number in one and "7" as a string/);
    expect(() => itemsOf('{"id":8}\n{"id":"7"}\n{"id":9}\n{"id":7}\n', BY_ID)).toThrow(/lines 2 and 4/);
    // Both kinds, no shared key: fine.
    expect(itemsOf('{"id":"7"}\n{"id":8}\n', BY_ID).map((s) => s.key)).toEqual(['7', '8']);
  });

  it("a record's fingerprint is its content, whatever the order of its fields: an edit changes it", () => {
    const [a, b, c] = itemsOf('{"id":1,"v":"a"}\n{ "v" : "a", "id" : 1 }\n{"id":1,"v":"b"}\n', BY_ID);
    expect(a!.fingerprint).toMatch(/^record:[0-9a-f]{32}$/);
    expect(b!.fingerprint).toBe(a!.fingerprint);
    expect(c!.fingerprint).not.toBe(a!.fingerprint);
    expect(itemsOf('{"id":1}\n', { ...BY_ID, keyField: null })[0]!.fingerprint).toBeNull();
  });
});

describe('the size of one item (audit 4, item 10)', () => {
  it(`refuses a line longer than ${MAX_ITEM_BYTES} bytes naming its line and the limit; one at the limit (and its CR) is an item`, () => {
    const at = 'a'.repeat(MAX_ITEM_BYTES);
    expect(itemsOf(`x\n${at}\r\ny\n`).map((s) => s.payload.item!.length)).toEqual([1, MAX_ITEM_BYTES, 1]);
    expect(() => itemsOf(`x\n\n${at}b\ny\n`)).toThrow(/list, line 3: the item is longer than 16 MiB, the limit of one item/);
    expect(() => itemsOf(`x\n${at}bc`)).toThrow(/line 2: the item is longer than 16 MiB/);
    expect(() => itemsOf(`{"id":1}\n"${at}"\n`, { format: 'jsonl', keyField: null, colsep: null })).toThrow(/line 2: the item is longer/);
  });

  it('keys a long item in time linear in it (no array of its characters)', () => {
    const long = 'é'.repeat(MAX_ITEM_BYTES / 2 - 1);
    const started = performance.now();
    for (let i = 0; i < 5; i++) itemKey(long);
    // An array of 8 M one-character strings per key took seconds and gigabytes; hashing 16 MiB five times takes well under one.
    expect(performance.now() - started).toBeLessThan(5000);
    expect(itemKey(long)).toMatch(/^é{160}…[0-9a-f]{16}$/);
  });
});
