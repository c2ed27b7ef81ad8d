import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resultWithOut } from '../../src/coordinator/declared-outputs.js';
import { isUpToDate } from '../../src/output/freshness.js';
import { checkOutputTemplate, outputPath, outputPathsOf, strictFoldersOf, tempPathOf, tempPrefixOf } from '../../src/output/output-path.js';
import { tempDir } from '../helpers/cli.js';

const task = (over: Record<string, unknown> = {}) => ({
  key: 'sub/a.log',
  batch: 'b',
  stage: '',
  seq: 7,
  attempt: 1,
  payload: { version: 1 as const, path: '/data/src/sub/a.log', rel: 'sub/a.log' },
  inputs: {},
  ...over,
});

describe('declared output paths', () => {
  it('render the placeholders, relative to the folder the run started in', () => {
    expect(outputPath({ template: 'out/{rel}.gz', base: '/work' }, task())).toBe('/work/out/sub/a.log.gz');
    expect(outputPath({ template: '{}.gz', base: '/work' }, task())).toBe('/data/src/sub/a.log.gz');
    expect(outputPath({ template: '/abs/{stem}-{#}{ext}', base: '/work' }, task())).toBe('/abs/a-7.log');
    expect(outputPath({ template: 'out/{inputs.x.out}.n', base: '/w' }, task({ inputs: { x: { out: 'p/q' } } }))).toBe('/w/out/p/q.n');
  });

  it("a value's `..` or NUL never steers the path: the attempt fails for good", () => {
    for (const evil of ['..', '../x', 'a/../../etc/passwd', 'x\0y']) {
      expect(() => outputPath({ template: 'out/{inputs.x.name}', base: '/w' }, task({ inputs: { x: { name: evil } } }))).toThrow(
        expect.objectContaining({ name: 'PermanentError' }),
      );
    }
    // A file name that merely contains dots is a name.
    expect(outputPath({ template: 'out/{name}', base: '/w' }, task({ payload: { version: 1, path: '/d/..a..', rel: '..a..' } }))).toBe('/w/out/..a..');
  });

  it('values that make a `..` with the text beside them fail too; a `..` the template writes itself is kept (audit 4, item 16)', () => {
    const item = (text: string) => task({ payload: { version: 1, path: 'list', rel: 'list', item: text, colsep: ',' } });
    expect(() => outputPath({ template: 'out/{1}.{2}/x', base: '/w' }, item('.,'))).toThrow(expect.objectContaining({ name: 'PermanentError' }));
    expect(() => outputPath({ template: 'out/{1}./x', base: '/w' }, item('.'))).toThrow(/make a "\.\."/);
    expect(outputPath({ template: 'out/{1}.{2}/x', base: '/w' }, item('a,b'))).toBe('/w/out/a.b/x');
    expect(outputPath({ template: '../res/{1}', base: '/w/run' }, item('a'))).toBe('/w/res/a');
  });

  it('the input file itself, or nothing at all, is not an output', () => {
    expect(() => outputPath({ template: '{}', base: '/w' }, task())).toThrow(/input file itself/);
    expect(() => outputPath({ template: '{start}', base: '/w' }, task())).toThrow(/not a file path/);
  });

  it('templates that could not give a stable path are refused at once', () => {
    expect(() => checkOutputTemplate('out/{attempt}', [])).toThrow(/cannot use \{attempt\}/);
    expect(() => checkOutputTemplate('out/{out}', [])).toThrow(/cannot use \{out\}/);
    expect(() => checkOutputTemplate('out/', [])).toThrow(/names a folder/);
    expect(() => checkOutputTemplate(' ', [])).toThrow(/needs a path template/);
    expect(() => checkOutputTemplate('{inputs.b.out}.x', ['a'])).toThrow(/does not need/);
    expect(() => checkOutputTemplate('{inputs.a.out}.x', ['a'])).not.toThrow();
  });

  it("an attempt's temporary path is hidden, beside the output, names its store and attempt, and cannot be guessed", () => {
    const store = 'a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6';
    expect(tempPathOf('/w/out/a.gz', store, 42)).toMatch(/^\/w\/out\/\.a\.gz\.splitdance-a1b2c3d4e5f6-42-[0-9a-f]{24}\.tmp$/);
    expect(tempPathOf('/w/out/a.gz', store, 42)).not.toBe(tempPathOf('/w/out/a.gz', store, 42));
    expect(tempPathOf('/w/out/a.gz', 'ffff' + store.slice(4), 42).startsWith(tempPrefixOf('/w/out/a.gz', store, 42))).toBe(false);
    // A long name is cut (on a character boundary) so the temporary name still fits NAME_MAX.
    const long = tempPathOf(`/w/out/${'é'.repeat(127)}`, store, 42);
    expect(Buffer.byteLength(long.slice('/w/out/'.length))).toBeLessThanOrEqual(255);
    expect(long).not.toContain('\uFFFD');
  });
});

describe('output paths no file can have (audit 4, item 2)', () => {
  const store = 'a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6';
  const named = (name: string) => task({ key: name, payload: { version: 1, path: `/data/src/${name}`, rel: name } });

  it('a name over NAME_MAX (255 bytes) fails for good, naming the limit; 255 bytes is a name', () => {
    const over = () => outputPath({ template: 'out/{name}.gz.done', base: '/w' }, named('n'.repeat(249)));
    expect(over).toThrow(expect.objectContaining({ name: 'PermanentError', message: expect.stringMatching(/is 257 bytes, over NAME_MAX \(255 bytes/) }));
    expect(() => outputPath({ template: '{}.gz', base: '/w' }, named('é'.repeat(127)))).toThrow(/257 bytes, over NAME_MAX/);
    expect(() => outputPath({ template: 'out/{}', base: '/w' }, task({ payload: { version: 1, path: 'l', rel: 'l', item: `${'x'.repeat(256)}/a` } }))).toThrow(/NAME_MAX/);
    expect(outputPath({ template: 'out/{name}.gz', base: '/w' }, named('n'.repeat(252)))).toBe(`/w/out/${'n'.repeat(252)}.gz`);
  });

  it('a path over PATH_MAX, or one whose temporary file beside it would be, fails for good naming the limit', () => {
    const folders = (n: number) => Array.from({ length: n }, () => 'd'.repeat(200)).join('/');
    expect(() => outputPath({ template: `/${folders(20)}/{name}`, base: '/w' }, task())).toThrow(/over PATH_MAX \(4095 bytes/);
    // A folder of 4,040 bytes: the output's path fits (4,061), its temporary file's (up to 4,132) would not.
    const tight = `/${folders(19)}/${'e'.repeat(220)}`;
    expect(Buffer.byteLength(`${tight}/${'n'.repeat(20)}`)).toBe(4061);
    expect(() => outputPath({ template: `${tight}/{name}`, base: '/w' }, named('n'.repeat(20)))).toThrow(/with its temporary file, 4132 bytes\) is over PATH_MAX/);
    expect(outputPath({ template: `/${folders(19)}/{name}`, base: '/w' }, named('n'.repeat(20)))).toHaveLength(3840);
  });

  it('a temporary name fits NAME_MAX for the longest name, attempt id and strict-folder count', () => {
    const temp = tempPathOf(`/w/out/${'n'.repeat(255)}`, store, Number.MAX_SAFE_INTEGER, 2047);
    expect(Buffer.byteLength(temp.split('/').at(-1)!)).toBeLessThanOrEqual(255);
    expect(strictFoldersOf(temp)).toBe(2047);
  });

  it('the folders walked strictly are those below the folder the template names: the temporary name says how many', () => {
    const strict = (template: string, t = task()) => strictFoldersOf(outputPathsOf({ template, base: '/w' }, t, store, 1).temp);
    expect(strict('out/{rel}.gz')).toBe(1); // out/sub/: `sub` is the key's
    expect(strict('out/x/{stem}.gz')).toBe(0);
    expect(strict('{}.gz')).toBe(1); // beside the input: below the source folder /data/src
    expect(strict('{dir}/gz/{name}.gz')).toBe(2);
    expect(strict('/abs/{stem}/{#}/x')).toBe(2);
    expect(strict('out/const.gz')).toBe(0);
    expect(strict('{inputs.x.out}.sig', task({ inputs: { x: { out: '/w/out/p/q.gz' } } }))).toBe(0);
    expect(strict('{1}/{2}', task({ payload: { version: 1, path: 'l', rel: 'l', item: 'a/b c' } }))).toBe(2);
  });
});

describe('up to date', () => {
  it('means the output is strictly newer than every input, to the nanosecond', () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'o'));
    const [input, need, out] = [join(dir, 'in'), join(dir, 'need'), join(dir, 'o', 'out')];
    for (const f of [input, need, out]) writeFileSync(f, 'x');
    const at = (f: string, s: number) => utimesSync(f, s, s);
    at(input, 1000);
    at(need, 1000);
    at(out, 1001);
    expect(isUpToDate(out, [input, need])).toBe(true);
    at(need, 1001); // as new as the output: not newer, so it runs
    expect(isUpToDate(out, [input, need])).toBe(false);
    at(need, 1000.5);
    expect(isUpToDate(out, [input, need])).toBe(true);
    expect(isUpToDate(out, [input, join(dir, 'gone')])).toBe(false);
    expect(isUpToDate(join(dir, 'o', 'missing'), [input])).toBe(false);
  });
});

describe('a success with a declared output stores { out } in its result', () => {
  it('over an object result, beside any other', () => {
    expect(JSON.parse(resultWithOut(null, '/o'))).toEqual({ out: '/o' });
    expect(JSON.parse(resultWithOut('{"n":1,"out":"mine"}', '/o'))).toEqual({ n: 1, out: '/o' });
    expect(JSON.parse(resultWithOut('[1,2]', '/o'))).toEqual({ out: '/o', value: [1, 2] });
    expect(JSON.parse(resultWithOut('"s"', '/o'))).toEqual({ out: '/o', value: 's' });
  });
});
