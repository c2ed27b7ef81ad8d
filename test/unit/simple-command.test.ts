import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shellQuote } from '../../src/worker/exec-template.js';
import { directArgv } from '../../src/worker/simple-command.js';

/** A double-quoted string sh reads back as `s` (no `$` or backquote left special). */
const dqQuote = (s: string) => `"${s.replace(/[\\"$`]/g, '\\$&')}"`;

/** The words /bin/sh itself makes of a line: `set -- LINE` splits and unquotes like a command's arguments. */
function shellWords(line: string): string[] {
  const r = spawnSync('/bin/sh', ['-c', `set -- ${line}\nprintf '%s\\0' "$@"`], { encoding: 'utf8' });
  expect(r.status).toBe(0);
  return r.stdout === '' ? [] : r.stdout.slice(0, -1).split('\0');
}

describe('directArgv: a command line that needs no shell', () => {
  it('splits plain words and the quoted placeholders every template renders', () => {
    expect(directArgv('gzip -kf /data/a.log')).toEqual(['gzip', '-kf', '/data/a.log']);
    expect(directArgv(`gzip -k ${shellQuote("/tmp/a'b $(touch x);.log")}`)).toEqual(['gzip', '-k', "/tmp/a'b $(touch x);.log"]);
    expect(directArgv(`  convert\t${shellQuote('in put.png')} out-1.png  `)).toEqual(['convert', 'in put.png', 'out-1.png']);
    expect(directArgv(`cp ${shellQuote('line1\nline2')} x`)).toEqual(['cp', 'line1\nline2', 'x']);
    expect(directArgv("echo2 a\\ b ''")).toEqual(['echo2', 'a b', '']);
  });

  it('reads double-quoted strings as sh does: literal text, \\ dropped only before $ ` " \\', () => {
    expect(directArgv('gzip -k "a b"')).toEqual(['gzip', '-k', 'a b']);
    expect(directArgv('gzip -k ""\'/d/it\'\\\'\'s\'""')).toEqual(['gzip', '-k', "/d/it's"]);
    expect(directArgv('cp "x*y;z|w > \'q\' #~ {a,b}" "line1\nline2" ""')).toEqual(['cp', "x*y;z|w > 'q' #~ {a,b}", 'line1\nline2', '']);
    expect(directArgv('cp "\\$x \\` \\" \\\\ \\a \\\'"')).toEqual(['cp', '$x ` " \\ \\a \\\'']);
    expect(directArgv('cp "a"\'b\'c"d"')).toEqual(['cp', 'abcd']);
  });

  it('leaves to the shell anything it would expand, redirect, chain or run itself', () => {
    for (const line of [
      'true', // a builtin: the shell runs it without a process
      'echo hi',
      'exit 3',
      'cd /tmp',
      'if true',
      'FOO=1 env',
      'gzip $HOME',
      'gzip *.log',
      'gzip a > b',
      'gzip a; rm b',
      'gzip a | cat',
      'gzip a && b',
      'gzip "$HOME"',
      'gzip "a`x`"',
      'gzip "a\\\nb"',
      'gzip "unterminated',
      'gzip "a\\"',
      'gzip `x`',
      'gzip ~/x',
      'gzip a # comment',
      'gzip a\nrm b',
      "gzip 'unterminated",
      'gzip a\\',
      '',
      '   ',
      "'' x",
      'sleep {1,2}',
    ]) {
      expect(directArgv(line), JSON.stringify(line)).toBeNull();
    }
  });

  it('whenever it answers, the answer is exactly the words /bin/sh makes', () => {
    const piece = fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9_./,:@%+=-]{1,6}$/),
      fc.string({ maxLength: 6 }).map(shellQuote),
      fc.string({ maxLength: 6 }).map(dqQuote),
      fc.constantFrom(' ', '  ', '\t', "\\'", '\\ ', '\\$', '\\\\', '"', '$x', '*', '#', '~', ';', '{a,b}', '\n'),
      fc.constantFrom('"a b"', '"\\a\\"', '"$x"', '"`x`"', '"\\\n"', '"\\\\\\$"', '"\'"', '"', '""'),
    );
    const line = fc.array(piece, { minLength: 1, maxLength: 8 }).map((ps) => `cmd ${ps.join('')}`);
    let answered = 0;
    fc.assert(
      fc.property(line, (l) => {
        const argv = directArgv(l);
        if (argv === null) return;
        answered++;
        expect(argv).toEqual(shellWords(l));
      }),
      { numRuns: 150 },
    );
    expect(answered).toBeGreaterThan(40); // the property is not vacuous
  });
});
