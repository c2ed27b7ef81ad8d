import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { walkDirectory, type WalkOptions } from '../../src/split/walk-directory.js';

let base: string;
let root: string;
beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'sd-walk-')));
  root = join(base, 'src');
  mkdirSync(root);
});
afterEach(() => {
  rmSync(base, { recursive: true, force: true });
});

function touch(rel: string, content = 'x'): string {
  const abs = join(root, rel);
  mkdirSync(dirname(abs), { recursive: true });
  writeFileSync(abs, content);
  return abs;
}

const opts = (o: Partial<WalkOptions> = {}): WalkOptions => ({ include: [], exclude: [], skip: [], ...o });
const keys = (o: Partial<WalkOptions> = {}, at = root) => [...walkDirectory(at, opts(o))].map((s) => s.key);

describe('walkDirectory: keys and order', () => {
  it('lists regular files recursively with / separators, sorted, depth first', () => {
    for (const rel of ['b.txt', 'a.txt', '2025/01/app.log', '2025/02/app.log', '2024/12/z.log', 'A.txt', 'a/b/c/d/e.txt', 'a0.txt'])
      touch(rel);
    mkdirSync(join(root, 'empty-dir'));
    expect(keys()).toEqual([
      '2024/12/z.log',
      '2025/01/app.log',
      '2025/02/app.log',
      'A.txt',
      'a.txt',
      'a/b/c/d/e.txt',
      'a0.txt',
      'b.txt',
    ]);
  });

  it('sorts by the whole key, bytewise: a folder sorts as its name plus "/"', () => {
    for (const rel of ['a/z', 'a-b', 'a.c', 'a/y/x', 'a0']) touch(rel);
    const got = keys();
    expect(got).toEqual(['a-b', 'a.c', 'a/y/x', 'a/z', 'a0']);
    expect(got).toEqual([...got].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))));
  });

  it('orders by UTF-8 bytes, not UTF-16 code units (U+FFFD before an emoji)', () => {
    for (const rel of ['\u{1F600}.txt', '\uFFFD.txt']) touch(rel);
    expect(keys()).toEqual(['\uFFFD.txt', '\u{1F600}.txt']);
  });

  it('sorts each directory by code units, so the order is stable and locale-free', () => {
    for (const rel of ['b', 'B', 'a', '_', '-', '10', '9', 'é', 'z']) touch(rel);
    expect(keys()).toEqual(['-', '10', '9', 'B', '_', 'a', 'b', 'z', 'é']);
  });

  it('yields the same keys in the same order every time', () => {
    for (let i = 0; i < 50; i++) touch(`d${i % 7}/f${(i * 13) % 50}.txt`);
    const first = keys();
    expect(first).toHaveLength(50);
    expect(keys()).toEqual(first);
  });

  it('gives each spec its absolute path, rel and a size:mtimeMs fingerprint', () => {
    const abs = touch('dir/file.bin', 'hello world');
    const when = new Date('2023-03-04T05:06:07.890Z');
    utimesSync(abs, when, when);
    const specs = [...walkDirectory(root, opts())];
    expect(specs).toHaveLength(1);
    const st = statSync(abs);
    expect(specs[0]).toEqual({
      key: 'dir/file.bin',
      payload: { version: 1, path: abs, rel: 'dir/file.bin' },
      fingerprint: `11:${Math.trunc(st.mtimeMs)}`,
    });
    expect(specs[0]!.fingerprint).toBe(`11:${when.getTime()}`);
  });

  it('changes the fingerprint when the size or mtime changes', () => {
    const abs = touch('f.txt', 'abc');
    const t1 = new Date('2020-01-01T00:00:00Z');
    utimesSync(abs, t1, t1);
    const fp1 = [...walkDirectory(root, opts())][0]!.fingerprint;
    writeFileSync(abs, 'abcd');
    utimesSync(abs, t1, t1);
    const fp2 = [...walkDirectory(root, opts())][0]!.fingerprint;
    const t2 = new Date('2020-01-01T00:00:01Z');
    utimesSync(abs, t2, t2);
    const fp3 = [...walkDirectory(root, opts())][0]!.fingerprint;
    expect(fp1).toBe(`3:${t1.getTime()}`);
    expect(fp2).toBe(`4:${t1.getTime()}`);
    expect(fp3).toBe(`4:${t2.getTime()}`);
  });

  it('yields nothing for an empty directory', () => {
    expect(keys()).toEqual([]);
  });

  it('streams: it is a lazy generator', () => {
    touch('a');
    touch('b');
    const gen = walkDirectory(root, opts());
    expect(gen.next().value?.key).toBe('a');
    touch('c'); // listed already? the root listing is read once, so 'c' is not seen
    expect(gen.next().value?.key).toBe('b');
    expect(gen.next().done).toBe(true);
  });
});

describe('walkDirectory: include / exclude', () => {
  beforeEach(() => {
    for (const rel of ['a.log', 'b.txt', 'logs/x.log', 'logs/y.txt', 'logs/deep/z.log', 'node_modules/m.js', 'src/node_modules/n.js', 'src/k.js'])
      touch(rel);
  });

  it('include without a slash matches the basename at any depth', () => {
    expect(keys({ include: ['*.log'] })).toEqual(['a.log', 'logs/deep/z.log', 'logs/x.log']);
  });

  it('include patterns with ** and no other slash work at any depth', () => {
    expect(keys({ include: ['**/*.js'] })).toEqual(['node_modules/m.js', 'src/k.js', 'src/node_modules/n.js']);
  });

  it('an include spelling out a whole relative path (no glob) matches it', () => {
    expect(keys({ include: ['logs/x.log'] })).toEqual(['logs/x.log']);
  });

  // These failed against the first walk-directory.ts (picomatch 4's `basename: true` applies
  // to every pattern, also those with a slash — micromatch/picomatch#89); src/split/globs.ts
  // now compiles path patterns and name patterns apart.
  it('include with a slash matches the relative path', () => {
    expect(keys({ include: ['logs/*.log'] })).toEqual(['logs/x.log']);
  });

  it('include with a slash and ** matches the relative path', () => {
    expect(keys({ include: ['logs/**/*.log'] })).toEqual(['logs/deep/z.log', 'logs/x.log']);
  });

  it('an include with a slash is anchored at the source root', () => {
    expect(keys({ include: ['node_modules/*.js'] })).toEqual(['node_modules/m.js']);
  });

  it('several includes are a union (name pattern + path pattern)', () => {
    expect(keys({ include: ['*.txt', 'src/*.js'] })).toEqual(['b.txt', 'logs/y.txt', 'src/k.js']);
  });

  it('several basename includes are a union', () => {
    expect(keys({ include: ['*.txt', 'k.js'] })).toEqual(['b.txt', 'logs/y.txt', 'src/k.js']);
  });

  it('exclude without a slash matches the basename, also of directories', () => {
    expect(keys({ exclude: ['*.log'] })).toEqual(['b.txt', 'logs/y.txt', 'node_modules/m.js', 'src/k.js', 'src/node_modules/n.js']);
    expect(keys({ exclude: ['node_modules'] })).toEqual(['a.log', 'b.txt', 'logs/deep/z.log', 'logs/x.log', 'logs/y.txt', 'src/k.js']);
  });

  it('exclude of a top-level directory path drops its whole subtree', () => {
    expect(keys({ exclude: ['logs/**'] })).toEqual(['a.log', 'b.txt', 'node_modules/m.js', 'src/k.js', 'src/node_modules/n.js']);
    expect(keys({ exclude: ['logs/deep'] })).toEqual([
      'a.log',
      'b.txt',
      'logs/x.log',
      'logs/y.txt',
      'node_modules/m.js',
      'src/k.js',
      'src/node_modules/n.js',
    ]);
  });

  it('exclude with a slash is anchored at the source root', () => {
    touch('src/logs/keep.txt');
    expect(keys({ exclude: ['logs/**'] })).toContain('src/logs/keep.txt');
    expect(keys({ exclude: ['logs/**'] })).not.toContain('logs/x.log');
  });

  it('exclude with a slash and a glob matches nested paths', () => {
    expect(keys({ include: ['*.log'], exclude: ['logs/deep/**'] })).toEqual(['a.log', 'logs/x.log']);
  });

  it('exclude wins over include', () => {
    expect(keys({ include: ['*.log'], exclude: ['deep'] })).toEqual(['a.log', 'logs/x.log']);
    expect(keys({ include: ['*.log'], exclude: ['x.log'] })).toEqual(['a.log', 'logs/deep/z.log']);
  });

  it('an include that matches nothing yields nothing', () => {
    expect(keys({ include: ['*.nope'] })).toEqual([]);
  });
});

describe('walkDirectory: hidden entries', () => {
  beforeEach(() => {
    for (const rel of ['visible.txt', '.hidden.txt', '.env', '.git/config', '.git/objects/ab/cd.txt', 'sub/.secret.txt', 'sub/ok.txt', '.cache/data.txt'])
      touch(rel);
  });

  it('skips hidden files and hidden directories by default', () => {
    expect(keys()).toEqual(['sub/ok.txt', 'visible.txt']);
  });

  it('a pattern that does not spell the dot does not include hidden entries', () => {
    expect(keys({ include: ['*.txt'] })).toEqual(['sub/ok.txt', 'visible.txt']);
    expect(keys({ include: ['**'] })).toEqual(['sub/ok.txt', 'visible.txt']);
    expect(keys({ include: ['**/*'] })).toEqual(['sub/ok.txt', 'visible.txt']);
  });

  it('an include naming the dot explicitly includes hidden files (by name, at any depth)', () => {
    expect(keys({ include: ['.env'] })).toEqual(['.env']);
    expect(keys({ include: ['.*.txt'] })).toEqual(['.hidden.txt', 'sub/.secret.txt']);
  });

  it('a name pattern naming the dot does not reach into a hidden directory', () => {
    touch('.cache/.env');
    expect(keys({ include: ['.env'] })).toEqual(['.env']);
  });

  it('an include naming a hidden directory explicitly includes its files', () => {
    expect(keys({ include: ['.git/**'] })).toEqual(['.git/config', '.git/objects/ab/cd.txt']);
    expect(keys({ include: ['.cache/*.txt'] })).toEqual(['.cache/data.txt']);
  });

  it('an include with a path naming a nested hidden file includes it', () => {
    expect(keys({ include: ['sub/.secret.txt'] })).toEqual(['sub/.secret.txt']);
    expect(keys({ include: ['**/.secret.txt'] })).toEqual(['sub/.secret.txt']);
  });

  // Failed against the first walk-directory.ts (hidden entries were matched on the whole path
  // without `basename`, so only a top-level `.secret.txt` could match); fixed in the current source.
  it('an include without a slash naming the dot matches a nested hidden file by basename', () => {
    expect(keys({ include: ['.secret.txt'] })).toEqual(['sub/.secret.txt']);
  });

  it('hidden entries can still be excluded', () => {
    expect(keys({ include: ['.git/**'], exclude: ['objects'] })).toEqual(['.git/config']);
  });
});

describe('walkDirectory: skip', () => {
  it('never lists a skipped file and never enters a skipped directory', () => {
    touch('a.txt');
    touch('store/db.sqlite');
    touch('store/logs/x.log');
    touch('keep/store/y.txt');
    const skipped = [join(root, 'store'), join(root, 'a.txt')];
    expect(keys({ skip: skipped })).toEqual(['keep/store/y.txt']);
  });

  it('skips the store folder even when an include would match it', () => {
    touch('.splitdance/splitdance.db');
    touch('data.db');
    expect(keys({ include: ['*.db', '.splitdance/**'], skip: [join(root, '.splitdance')] })).toEqual(['data.db']);
  });

  it('skips a symlink whose target is a skipped path', () => {
    touch('store.db');
    symlinkSync(join(root, 'store.db'), join(root, 'link.db'));
    expect(keys({ skip: [join(root, 'store.db')] })).toEqual([]);
  });
});

describe('walkDirectory: the store is skipped however the source is reached', () => {
  it('a source given through a symlink still skips the store inside it', () => {
    touch('.splitdance/splitdance.db');
    touch('store.db');
    touch('data.txt');
    const link = join(base, 'via-link');
    symlinkSync(root, link);
    // The store named by its real path, the source walked through the link (and the other way round).
    expect(keys({ include: ['**', '.splitdance/**'], skip: [join(root, '.splitdance'), join(root, 'store.db')] }, link)).toEqual(['data.txt']);
    expect(keys({ include: ['**', '.splitdance/**'], skip: [join(link, '.splitdance'), join(link, 'store.db')] }, root)).toEqual(['data.txt']);
  });

  it('a store path that does not exist yet is still compared by its folder\'s real path', () => {
    touch('data.txt');
    const link = join(base, 'via-link');
    symlinkSync(root, link);
    touch('new.db');
    expect(keys({ skip: [join(link, 'new.db')] })).toEqual(['data.txt']);
  });
});

describe('walkDirectory: symlinks and special files', () => {
  it('a link to a file inside the source is a task under the link name, with the target fingerprint', () => {
    const target = touch('real/target.txt', '12345');
    symlinkSync(target, join(root, 'abs-link.txt'));
    symlinkSync('real/target.txt', join(root, 'rel-link.txt'));
    const specs = [...walkDirectory(root, opts())];
    expect(specs.map((s) => s.key)).toEqual(['abs-link.txt', 'real/target.txt', 'rel-link.txt']);
    const st = statSync(target);
    for (const s of specs) expect(s.fingerprint).toBe(`5:${Math.trunc(st.mtimeMs)}`);
    expect(specs[0]!.payload.path).toBe(join(root, 'abs-link.txt'));
  });

  it('a link to a directory is not descended', () => {
    touch('dir/inner.txt');
    symlinkSync(join(root, 'dir'), join(root, 'dirlink'));
    symlinkSync(join(root, 'dir'), join(root, 'dirlink-rel'), 'dir');
    expect(keys()).toEqual(['dir/inner.txt']);
  });

  it('a link out of the source is skipped, to a file or a directory', () => {
    const outside = join(base, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'secret.txt'), 'no');
    symlinkSync(join(outside, 'secret.txt'), join(root, 'out-file'));
    symlinkSync(outside, join(root, 'out-dir'));
    symlinkSync('../outside/secret.txt', join(root, 'out-rel'));
    // a sibling whose name starts with the root's name is still outside
    const sibling = `${root}-sibling`;
    mkdirSync(sibling);
    writeFileSync(join(sibling, 's.txt'), 'no');
    symlinkSync(join(sibling, 's.txt'), join(root, 'out-sibling'));
    touch('in.txt');
    expect(keys()).toEqual(['in.txt']);
  });

  it('a dangling link and a link loop are skipped without throwing', () => {
    touch('ok.txt');
    symlinkSync(join(root, 'missing.txt'), join(root, 'dangling'));
    symlinkSync(join(root, 'loop-b'), join(root, 'loop-a'));
    symlinkSync(join(root, 'loop-a'), join(root, 'loop-b'));
    symlinkSync(join(root, 'self'), join(root, 'self'));
    expect(keys()).toEqual(['ok.txt']);
  });

  it('a link to the source root itself is not descended', () => {
    touch('f.txt');
    symlinkSync(root, join(root, 'me'));
    expect(keys()).toEqual(['f.txt']);
  });

  it('a root given through a symlink still accepts links inside it', () => {
    touch('t.txt');
    symlinkSync(join(root, 't.txt'), join(root, 'l.txt'));
    const viaLink = join(base, 'root-link');
    symlinkSync(root, viaLink);
    expect(keys({}, viaLink)).toEqual(['l.txt', 't.txt']);
  });

  it('skips non-regular files such as a FIFO (and links to them)', () => {
    touch('a.txt');
    execFileSync('mkfifo', [join(root, 'pipe')]);
    symlinkSync(join(root, 'pipe'), join(root, 'pipe-link'));
    expect(keys()).toEqual(['a.txt']);
  });

  it('a hidden link is skipped like a hidden file', () => {
    touch('t.txt');
    symlinkSync(join(root, 't.txt'), join(root, '.t-link'));
    expect(keys()).toEqual(['t.txt']);
  });
});

describe('walkDirectory: hostile names', () => {
  const nfc = 'caf\u00e9.txt';
  const nfd = 'cafe\u0301.txt';
  const names = [
    'with space.txt',
    "single'quote.txt",
    'double"quote.txt',
    '$(touch pwned).txt',
    '`touch pwned2`.txt',
    'semi;colon.txt',
    'pi|pe.txt',
    'new\nline.txt',
    'tab\there.txt',
    '-leading-dash.txt',
    '--rm -rf',
    'emoji 🚀🎉.txt',
    'back\\slash.txt',
    'star*glob?.txt',
    'brace{}.txt',
    nfc,
    nfd,
  ];

  it('comes out as exact keys, one task each, NFC and NFD kept apart', () => {
    expect(nfc).not.toBe(nfd);
    for (const n of names) touch(`dir ${'$'}HOME/${n}`, n);
    const specs = [...walkDirectory(root, opts())];
    const expected = names.map((n) => `dir $HOME/${n}`).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(specs.map((s) => s.key)).toEqual(expected);
    for (const s of specs) {
      expect(s.payload.path).toBe(join(root, s.key));
      expect(s.payload.rel).toBe(s.key);
      // the key's file really holds its own name: nothing was normalised or mangled
      const name = s.key.slice('dir $HOME/'.length);
      expect(statSync(s.payload.path).size).toBe(Buffer.byteLength(name));
    }
    const nfcSpec = specs.find((s) => s.key.endsWith(nfc))!;
    const nfdSpec = specs.find((s) => s.key.endsWith(nfd))!;
    expect(nfcSpec.key).not.toBe(nfdSpec.key);
    expect(nfcSpec.fingerprint!.split(':')[0]).toBe(String(Buffer.byteLength(nfc)));
    expect(nfdSpec.fingerprint!.split(':')[0]).toBe(String(Buffer.byteLength(nfd)));
  });

  it('matches hostile names with include globs literally', () => {
    for (const n of names) touch(n);
    expect(keys({ include: ['*.txt'], exclude: ['*pwned*', 'caf*'] })).toEqual(
      names
        .filter((n) => n.endsWith('.txt') && !n.includes('pwned') && !n.startsWith('caf'))
        .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
    );
  });
});
