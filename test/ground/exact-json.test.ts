import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { exactText, JsonDepthError, JsonNumber, JsonSyntaxError, parseExact, plainJson } from '../../src/exact-json.js';

describe('parseExact', () => {
  it('reads any JSON as JSON.parse does, and writes it back as JSON.stringify does', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value);
        const exact = parseExact(text, 1000);
        expect(plainJson(exact)).toEqual(JSON.parse(text));
        expect(exactText(exact)).toBe(text);
      }),
      { numRuns: 500 },
    );
  });

  it('keeps the digits of a number a JS number would change, and takes spacing like JSON.parse', () => {
    const v = parseExact(' {"a" : [12345678901234567891, 7, 7.0, 1e2, -0, 1e400, 0.5] , "b":"x"} ', 100) as { a: unknown[] };
    expect(v.a).toEqual([new JsonNumber('12345678901234567891'), 7, new JsonNumber('7.0'), new JsonNumber('1e2'), new JsonNumber('-0'), new JsonNumber('1e400'), 0.5]);
    expect(exactText(v as never)).toBe('{"a":[12345678901234567891,7,7.0,1e2,-0,1e400,0.5],"b":"x"}');
    // Plain data: an integer a JS number cannot hold is its text; the others are numbers, as JSON.parse reads them.
    expect(plainJson(v as never)).toEqual({ a: ['12345678901234567891', 7, 7, 100, -0, '1e400', 0.5], b: 'x' });
  });

  it('a repeated field keeps its last value and __proto__ is an own field, as with JSON.parse', () => {
    const text = '{"a":1,"a":2,"__proto__":{"polluted":true}}';
    const v = parseExact(text, 10) as Record<string, unknown>;
    expect(v).toEqual(JSON.parse(text));
    expect(Object.hasOwn(v, '__proto__')).toBe(true);
    const fresh: Record<string, unknown> = {};
    expect(fresh.polluted).toBeUndefined();
    expect(Object.hasOwn(plainJson(v as never) as object, '__proto__')).toBe(true);
  });

  it("refuses what JSON.parse refuses, in JSON.parse's words, and nesting deeper than asked", () => {
    for (const bad of ['', '{', '{"a":1,}', '[1 2]', '01', '"a\\x"', '"\u0001"', '{"a":1}x', 'tru', '-', '{1:2}']) {
      let native = '';
      try {
        JSON.parse(bad);
      } catch (err) {
        native = (err as Error).message;
      }
      expect(native, bad).not.toBe('');
      expect(() => parseExact(bad, 10), bad).toThrow(new JsonSyntaxError(native));
    }
    expect(() => parseExact('[[[1]]]', 2)).toThrow(JsonDepthError);
    expect(parseExact('[[1]]', 2)).toEqual([[1]]);
    // Deep nesting is refused before it is built, without recursion.
    expect(() => parseExact('['.repeat(1_000_000), 100)).toThrow(JsonDepthError);
  });
});
