import { describe, expect, it } from 'vitest';
import { recordField } from '../../src/template/item-values.js';
import type { TaskPayload } from '../../src/store/task-store.js';

/** A payload as a JSON Lines record is stored: the line, and the record as JSON.parse reads it. */
const stored = (line: string): TaskPayload => ({ version: 1, path: 'l.jsonl', rel: 'l.jsonl', item: line, record: JSON.parse(line) });

describe('{item.FIELD} (audit 5, item 3)', () => {
  it('is the field exactly as the line wrote it: a 64-bit id keeps every digit, 7.0 stays 7.0', () => {
    const p = stored('{"id":12345678901234567891,"n":7.0,"e":1e2,"o":{"big":-98765432109876543210,"s":"x\\ty"},"s":"12345678901234567891"}');
    expect(recordField(p, 'id')).toBe('12345678901234567891');
    expect(recordField(p, 'n')).toBe('7.0');
    expect(recordField(p, 'e')).toBe('1e2');
    expect(recordField(p, 'o')).toBe('{"big":-98765432109876543210,"s":"x\\ty"}');
    expect(recordField(p, 'o.big')).toBe('-98765432109876543210');
    expect(recordField(p, 's')).toBe('12345678901234567891');
  });

  it('is what it always was for ordinary values; constructor is no field', () => {
    const p = stored('{"id":7,"f":0.5,"t":true,"z":null,"a":[1,"b"],"u":"ü"}');
    expect(['id', 'f', 't', 'z', 'a', 'u'].map((f) => recordField(p, f))).toEqual(['7', '0.5', 'true', 'null', '[1,"b"]', 'ü']);
    expect(() => recordField(p, 'constructor')).toThrow(/the record has no "constructor"/);
  });
});
