import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { renderExec } from '../../src/template/exec-command.js';
import { shellQuote } from '../../src/template/exec-template.js';
import type { TemplateTask } from '../../src/template/template-task.js';

let work: string;
beforeEach(() => {
  work = realpathSync(mkdtempSync(join(tmpdir(), 'sd-argv-')));
});
afterEach(() => {
  rmSync(work, { recursive: true, force: true });
});

function task(key: string, rel = 'r', batch = 'b', path = '/data/a.log'): TemplateTask {
  return { key, batch, stage: 'main', seq: 42, attempt: 1, output: null, inputs: {}, payload: { version: 1, path, rel } };
}

/** The arguments /bin/sh (dash) passes to the printer for `line`, run in the scratch dir. */
function shellArgs(line: string): string[] {
  const out = execFileSync('/bin/sh', ['-c', line], { cwd: work, encoding: 'utf8', env: { PATH: process.env.PATH } });
  return out.split('\0').slice(0, -1);
}

describe('renderExec: a simple command runs without a shell, each value exactly in its word', () => {
  it('splits plain words and puts each value in place, unquoted; the fallback is the quoted line', () => {
    const hostile = "/tmp/a'b $(touch x);.log";
    expect(renderExec('gzip -kf {}', task('k', 'r', 'b', hostile))).toEqual({ argv: ['gzip', '-kf', hostile], fallback: `gzip -kf ${shellQuote(hostile)}` });
    expect(renderExec('  convert\t{} out-1.png  ', task('k', 'r', 'b', 'in put.png')).argv).toEqual(['convert', 'in put.png', 'out-1.png']);
    expect(renderExec("cp {key} x{key}y 'a{key}' \"{key}b\"", task('line1\nline2')).argv).toEqual(['cp', 'line1\nline2', 'xline1\nline2y', 'aline1\nline2', 'line1\nline2b']);
    expect(renderExec("echo2 a\\ b '' {start}", task('k')).argv).toEqual(['echo2', 'a b', '', '']);
    expect(renderExec('sleep 0', task('k'))).toEqual({ argv: ['sleep', '0'], fallback: 'sleep 0' });
  });

  it('reads double-quoted strings as sh does: literal text, \\ dropped only before $ ` " \\', () => {
    const k = task("/d/it's");
    expect(renderExec('gzip -k "a b"', k).argv).toEqual(['gzip', '-k', 'a b']);
    expect(renderExec('gzip -k ""\'{key}\'""', k).argv).toEqual(['gzip', '-k', "/d/it's"]);
    expect(renderExec('cp "x*y;z|w > \'q\' #~ {a,b}" "line1\nline2" ""', k).argv).toEqual(['cp', "x*y;z|w > 'q' #~ {a,b}", 'line1\nline2', '']);
    expect(renderExec('cp "\\$x \\` \\" \\\\ \\a \\\'"', k).argv).toEqual(['cp', '$x ` " \\ \\a \\\'']);
    expect(renderExec('cp "a"\'b\'c"d"', k).argv).toEqual(['cp', 'abcd']);
    // An escaped { is no placeholder; an escaped backslash before one is.
    expect(renderExec('cp "\\{}" "\\\\{key}"', k).argv).toEqual(['cp', '\\{}', "\\/d/it's"]);
  });

  it('each task gets its own values from the compiled template', () => {
    expect(renderExec('wc -c {key}', task('one')).argv).toEqual(['wc', '-c', 'one']);
    expect(renderExec('wc -c {key}', task('two')).argv).toEqual(['wc', '-c', 'two']);
  });

  it('leaves to the shell anything it would expand, redirect, chain or run itself, with the line quoted by context', () => {
    for (const template of [
      'true', // a builtin: the shell runs it without a process
      'echo hi {}',
      'printf %s {}',
      'exit 3',
      'cd /tmp',
      'if true',
      'FOO=1 env',
      "'A=1' env",
      'gzip $HOME',
      'gzip *.log',
      'gzip a > b',
      'gzip a; rm b',
      'gzip a | cat',
      'gzip a && b',
      'gzip "$HOME"',
      'gzip "a`x`"',
      'gzip "a\\\nb"',
      'gzip `x`',
      'gzip ~/x',
      'gzip {} # comment',
      'gzip a\nrm b',
      'gzip a\\',
      'gzip \\{}',
      '',
      '   ',
      "'' x",
      'sleep {1,2}',
      // A value in the first word could name a builtin, a reserved word or an assignment.
      '{} -x',
      '{name}',
      "'{key}' a",
      'x{} a',
    ]) {
      const { argv, fallback } = renderExec(template, task('v'));
      expect(fallback, JSON.stringify(template)).toBeNull();
      expect(argv.slice(0, 2), JSON.stringify(template)).toEqual(['/bin/sh', '-c']);
      expect(argv).toHaveLength(3);
    }
    expect(renderExec('{batch} {key}', task('/tmp', 'r', 'cd')).argv).toEqual(['/bin/sh', '-c', "'cd' '/tmp'"]);
  });
});

/** A piece of a word: its template text, the text sh makes of it for values `v`, and whether it takes a shell. */
interface Piece {
  src: string;
  out: (v: Values) => string;
  shell?: boolean;
}
type Values = Record<'key' | 'rel' | 'batch', string>;

const lit = (src: string, text = src): Piece => ({ src, out: () => text });
const placeholder = fc.constantFrom<keyof Values>('key', 'rel', 'batch').map((n): Piece => ({ src: `{${n}}`, out: (v) => v[n] }));
/** Inside '…' or "…": text and placeholders joined, each with what sh makes of it. */
const quotedIn = (q: string, text: fc.Arbitrary<Piece>) =>
  fc.array(fc.oneof(text, placeholder), { maxLength: 4 }).map((ps): Piece => ({ src: q + ps.map((p) => p.src).join('') + q, out: (v) => ps.map((p) => p.out(v)).join('') }));
/** Literal characters of each kind; no lone `{` (next to `}` it would make a placeholder), and braces no placeholder is meant by. */
const anyChar = fc.constantFrom('a', ' ', '\t', '\n', '*', '?', ';', '|', '&', '>', '#', '~', '!', '=', '-', '(', ')', '{ x }', 'é');
const simplePiece: fc.Arbitrary<Piece> = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9_./,:@%+=-]{1,5}$/).map((s) => lit(s)),
  placeholder,
  quotedIn("'", fc.oneof(anyChar, fc.constantFrom('"', '$x', '`x`', '\\', '$(x)')).map((s) => lit(s))),
  quotedIn(
    '"',
    fc.oneof(
      anyChar.map((s) => lit(s)),
      fc.constantFrom(lit("'"), lit('\\$', '$'), lit('\\`', '`'), lit('\\"', '"'), lit('\\\\', '\\'), lit('\\a', '\\a'), lit("\\'", "\\'"), lit('\\{}', '\\{}')),
    ),
  ),
  fc.constantFrom(lit('\\ ', ' '), lit("\\'", "'"), lit('\\$', '$'), lit('\\*', '*'), lit('\\\\', '\\'), lit('\\#', '#'), lit('\\;', ';')),
);
const piece: fc.Arbitrary<Piece> = fc.oneof(
  { arbitrary: simplePiece, weight: 12 },
  // Text sh expands (so the template takes a shell) into a known argument.
  { arbitrary: fc.constantFrom<Piece>(
    { src: '"$(printf %s ab)"', out: () => 'ab', shell: true },
    { src: '"${SD_UNSET:-x y}"', out: () => 'x y', shell: true },
    { src: '$(printf %s cd)', out: () => 'cd', shell: true },
    { src: '\\{}', out: () => '{}', shell: true },
    // A command substitution drops trailing newlines, and nothing else of the value.
    { src: '"$(printf %s {key})"', out: (v) => v.key.replace(/\n+$/, ''), shell: true },
  ), weight: 1 },
);
const word = fc.array(piece, { minLength: 1, maxLength: 4 });
const sep = fc.constantFrom(' ', '\t', '  ');
const template = fc.record({
  words: fc.array(fc.tuple(sep, word), { minLength: 1, maxLength: 4 }),
  tail: fc.constantFrom<[string, boolean]>(['', false], [' ', false], ['', false], [' 2>/dev/null', true], [' # {key} ends here', true], ['; :', true]),
});
const hostile = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 10 }).map((s) => s.replace(/\0/g, '')),
  fc
    .array(fc.constantFrom("'", '"', '$(touch PWNED)', '`touch PWNED`', '$HOME', '\\', '\n', ' ', '\t', '*', '?', '[a]', '=', 'A=1', '-', '--x', ';', '{}', '{key}', '#', '~', "'\\''"), {
      maxLength: 6,
    })
    .map((parts) => parts.join('')),
);

describe('renderExec: the direct argv is what /bin/sh -c runs for the quoted line', () => {
  // Random templates of words, quotes and placeholders, random hostile values: the argv, what
  // /bin/sh (dash) runs for the quoted line, and what the template means all agree.
  it('whenever it answers, the answer is exactly the words /bin/sh makes of the quoted line', () => {
    const PRINTER = "/usr/bin/printf '%s\\0'"; // the builtin printf would keep the template in the shell
    let direct = 0;
    let shell = 0;
    fc.assert(
      fc.property(template, fc.record({ key: hostile, rel: hostile, batch: hostile }), ({ words, tail }, v) => {
        const src = PRINTER + words.map(([s, ps]) => s + ps.map((p) => p.src).join('')).join('') + tail[0];
        const expected = words.map(([, ps]) => ps.map((p) => p.out(v)).join(''));
        const takesShell = tail[1] || words.some(([, ps]) => ps.some((p) => p.shell));
        const { argv, fallback } = renderExec(src, task(v.key, v.rel, v.batch));
        if (fallback === null) {
          shell++;
          expect(takesShell, src).toBe(true);
          expect(shellArgs(argv[2]!)).toEqual(expected);
        } else {
          direct++;
          expect(takesShell, src).toBe(false);
          expect(argv).toEqual(['/usr/bin/printf', '%s\\0', ...expected]);
          expect(shellArgs(fallback)).toEqual(expected);
        }
        expect(readdirSync(work)).toEqual([]); // nothing ran: no PWNED
      }),
      { numRuns: 250 },
    );
    // Neither side of the property is vacuous.
    expect(direct).toBeGreaterThan(40);
    expect(shell).toBeGreaterThan(40);
  });
});
