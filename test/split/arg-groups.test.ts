import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkArgGroups, readArgGroups, type ArgGroup } from '../../src/split/arg-groups.js';
import { MAX_ITEM_BYTES, readItems, type ItemsMode } from '../../src/split/items.js';
import { fieldsOf } from '../../src/template/item-values.js';
import { parseDelimiter } from '../../src/job/command-line-items.js';

const LINES: ItemsMode = { format: 'lines', keyField: null, colsep: null };
const values = (linked: boolean, ...v: string[]): ArgGroup => ({ linked, values: v });

function fileOf(bytes: Buffer | string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'sd-args-')), 'list');
  writeFileSync(path, bytes);
  return path;
}

const combos = (groups: ArgGroup[], mode = LINES) => [...readArgGroups(groups, mode)].map((s) => fieldsOf(s.payload));

describe('::: groups (GNU parallel input sources)', () => {
  it('several groups are their product, the last varying fastest; {1}, {2} are the values and {} is them joined by a space', () => {
    const specs = [...readArgGroups([values(false, 'a', 'b'), values(false, '1', '2')], LINES)];
    expect(specs.map((s) => fieldsOf(s.payload))).toEqual([['a', '1'], ['a', '2'], ['b', '1'], ['b', '2']]);
    expect(specs.map((s) => s.payload.item)).toEqual(['a 1', 'a 2', 'b 1', 'b 2']);
  });

  it(':::+ pairs a group with the one before, value by value, inside the product', () => {
    expect(combos([values(false, 'a', 'b'), values(false, '1', '2'), values(true, 'x', 'y')])).toEqual([
      ['a', '1', 'x'],
      ['a', '2', 'y'],
      ['b', '1', 'x'],
      ['b', '2', 'y'],
    ]);
  });

  it("keys tell apart values that join alike ('a b' c and a 'b c'), and every value comes back exactly", () => {
    const hostile = ['a b', 'c', '', 'tab\there', 'new\nline', `it's "q"`, '[1]'];
    const one = [...readArgGroups([values(false, 'a b'), values(false, 'c')], LINES)][0]!;
    const two = [...readArgGroups([values(false, 'a'), values(false, 'b c')], LINES)][0]!;
    expect(one.payload.item).toBe(two.payload.item);
    expect(one.key).not.toBe(two.key);
    const specs = [...readArgGroups([values(false, ...hostile)], LINES)];
    expect(new Set(specs.map((s) => s.key)).size).toBe(hostile.length);
    expect(specs.map((s) => fieldsOf(s.payload)[0])).toEqual(hostile);
    // A plain single value is its own key, as a list's line is; an empty one or one like a key of several is a JSON array.
    expect(specs.map((s) => s.key).slice(0, 3)).toEqual(['a b', 'c', '[""]']);
    expect(specs[6]!.key).toBe('["[1]"]');
  });

  it('reads the items of a :::: file as a list (empty lines skipped), with -0 or -d when given', () => {
    const lines = fileOf('x\r\n\ny\n');
    const nul = fileOf('p q\0new\nline\0');
    const group = (path: string): ArgGroup => ({ linked: false, file: { path, shown: 'list' } });
    expect(combos([group(lines), values(false, '1')])).toEqual([['x', '1'], ['y', '1']]);
    expect(combos([values(false, '1'), group(nul)], { ...LINES, delimiter: '\0' })).toEqual([['1', 'p q'], ['1', 'new\nline']]);
  });

  it('an empty group, or linked groups of different lengths, is a usage error naming them (parallel would drop values silently)', () => {
    expect(() => checkArgGroups([values(false, 'a'), { linked: false, file: { path: fileOf('\n\n'), shown: 'empty.txt' } }], LINES)).toThrow(/:::: empty.txt holds no values/);
    expect(() => checkArgGroups([values(false, 'a', 'b', 'c'), values(true, '1', '2')], LINES)).toThrow(
      /the :::\+ group 2 is linked to the ::: group 1 value by value, but has 2 values and that one 3/,
    );
    expect(() => checkArgGroups([values(false, 'a', 'b'), values(true, '1', '2')], LINES)).not.toThrow();
  });
});

describe('-0 and -d: items between delimiters', () => {
  const items = (bytes: Buffer | string, delimiter: string) => [...readItems(fileOf(bytes), 'list', { ...LINES, delimiter })].map((s) => s.payload.item);

  it('-0: a newline, a CR or a space is part of an item; a trailing NUL makes no empty item', () => {
    expect(items('a b\0c\nd\r\0\0e\0', '\0')).toEqual(['a b', 'c\nd\r', 'e']);
  });

  it('a delimiter of several characters, also where it spans two reading blocks (1 MiB)', () => {
    const first = 'z'.repeat((1 << 20) - 2);
    expect(items(`${first}XYZbXYZc`, 'XYZ')).toEqual([first, 'b', 'c']);
    expect(items(`${'q'.repeat((1 << 20) - 1)}XYZ`, 'XYZ')).toEqual(['q'.repeat((1 << 20) - 1)]);
    expect(items('aXYbXYcX', 'XY')).toEqual(['a', 'b', 'cX']);
  });

  it(`an item longer than ${MAX_ITEM_BYTES} bytes is refused by its number, never read whole; one at the limit is an item`, () => {
    const at = Buffer.alloc(MAX_ITEM_BYTES, 0x61);
    expect(items(Buffer.concat([Buffer.from('x\0'), at, Buffer.from('\0')]), '\0').map((i) => i!.length)).toEqual([1, MAX_ITEM_BYTES]);
    expect(() => items(Buffer.concat([Buffer.from('x\0'), at, Buffer.from('b\0')]), '\0')).toThrow(/list, item 2: the item is longer than 16 MiB/);
  });

  it("-d takes GNU parallel's escapes (\\n \\t \\r \\0 \\NNN), \\\\ as one backslash, and any other text as written", () => {
    expect(['\\n', '\\t', '\\r', '\\0', '\\012', '\\\\', '::', 'a\\tb'].map(parseDelimiter)).toEqual(['\n', '\t', '\r', '\0', '\n', '\\', '::', 'a\tb']);
    expect(() => parseDelimiter('')).toThrow(/-d is empty/);
  });
});
