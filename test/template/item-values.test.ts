import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PermanentError } from '../../src/errors.js';
import { fieldsOf, recordField } from '../../src/template/item-values.js';
import type { TaskPayload } from '../../src/store/task-store.js';
import { tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';

const item = (text: string, colsep?: string) => ({ version: 1 as const, path: 'list', rel: 'list', item: text, ...(colsep === undefined ? {} : { colsep }) });

// Audit 4, item 14: `--colsep` is the user's pattern, applied to every item of a list, hostile
// ones included, inside the coordinator (declared outputs) as well as the workers. `(a+)+b` on
// a long run of `a`s backtracked for minutes there: SIGTERM took 136 s to be heard.
describe('--colsep on hostile items', () => {
  it('splits in time linear in the item, whatever the pattern', () => {
    const started = performance.now();
    const text = `x,${'a'.repeat(100_000)}c,y`;
    expect(fieldsOf(item(text, '(?:a+)+b|,'))).toEqual(['x', `${'a'.repeat(100_000)}c`, 'y']);
    // The automaton reads 100,000 characters a few times; backtracking takes 2^100000 steps.
    // The bound tells one from the other on any machine.
    expect(performance.now() - started).toBeLessThan(5_000);
  }, 20_000);

  it('a pattern whose every search reads the rest of the item fails the attempt for good after 2 s, naming it', () => {
    // `,[^y]*y|,` splits 200,000 commas in minutes of quadratic searching, inside the coordinator.
    const started = performance.now();
    const call = () => fieldsOf(item(','.repeat(200_000), ',[^y]*y|,'));
    expect(call).toThrow(PermanentError);
    expect(call).toThrow(/--colsep ",\[\^y\]\*y\|,": took over 2 s to split this item of 200000 characters/);
    expect(performance.now() - started).toBeLessThan(20_000);
  }, 40_000);

  it('keeps what a split means: fields, captured separators, empty fields', () => {
    expect(fieldsOf(item('a,b;;c', '[,;]'))).toEqual(['a', 'b', '', 'c']);
    expect(fieldsOf(item('a1b2c', '(\\d)'))).toEqual(['a', '1', 'b', '2', 'c']);
    expect(fieldsOf(item('  a  b  '))).toEqual(['a', 'b']);
  });

  it('a stored pattern the linear engine cannot take fails the attempt for good, saying why', () => {
    // Stored by an earlier version, which took any pattern.
    const call = () => fieldsOf(item('a,b', ',(?=b)'));
    expect(call).toThrow(PermanentError);
    expect(call).toThrow('--colsep ",(?=b)": uses lookaround, a backreference or a repeat count over a few hundred');
  });

  it('a run with a backtracking --colsep and a declared output on {1} finishes', async () => {
    const dir = tempDir('sd-colsep-');
    writeFileSync(join(dir, 'list.txt'), `${'a'.repeat(50_000)}!,one\nb,two\n`);
    const r = await mainIn(dir, ['run', '--items', 'list.txt', '--colsep', '(?:a+)+b|,', '--output', 'out/{2}', '--exec', 'printf %s {2} > {out}', '--quiet']);
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(dir, 'out', 'one'), 'utf8')).toBe('one');
    expect(readFileSync(join(dir, 'out', 'two'), 'utf8')).toBe('two');
  }, 60_000);
});

/** A payload as a JSON Lines record is stored: the line, and the record as JSON.parse reads it. */
const stored = (line: string): TaskPayload => ({ version: 1, path: 'l.jsonl', rel: 'l.jsonl', item: line, record: JSON.parse(line) });

describe('{item.FIELD} (audit 4, item 3)', () => {
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
