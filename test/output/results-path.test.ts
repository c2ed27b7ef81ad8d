import { describe, expect, it } from 'vitest';
import { resultsName } from '../../src/output/results-path.js';

// The folder name of a key under --results DIR/1/: parallel's escapes, and never ., .., empty,
// a control character or more than NAME_MAX bytes; distinct keys, distinct names.

describe('resultsName', () => {
  it.each([
    ['a', 'a'],
    ['b c', 'b c'],
    ['2025/01/app.log', '2025\\_01\\_app.log'],
    ['c\\d', 'c\\\\d'],
    ['tab\there', 'tab\\there'],
    ['nul\0', 'nul\\0'],
    ['new\nline', 'new\\nline'],
    ['esc\x1b[0m', 'esc\\x1b[0m'],
    ['.', '\\.'],
    ['..', '\\..'],
    ['', '\\'],
    ['\\.', '\\\\.'],
    ['.hidden', '.hidden'],
    ['../x', '..\\_x'],
  ])('%j is %j', (key, name) => {
    expect(resultsName(key)).toBe(name);
  });

  it('cuts a long name to NAME_MAX bytes on a whole escape or character, with a hash that keeps keys apart', () => {
    const keys = ['é'.repeat(200), `${'é'.repeat(200)}x`, `${'/'.repeat(200)}`, `${'/'.repeat(200)}/`];
    const names = keys.map(resultsName);
    for (const n of names) {
      expect(Buffer.byteLength(n)).toBeLessThanOrEqual(255);
      expect(n).toMatch(/\\#[0-9a-f]{16}$/);
      expect(n.replace(/\\#[0-9a-f]{16}$/, '')).not.toMatch(/(^|[^\\])(\\\\)*\\$/); // no half escape before the hash
    }
    expect(new Set(names).size).toBe(keys.length);
    expect(resultsName('a'.repeat(255))).toBe('a'.repeat(255));
  });
});
