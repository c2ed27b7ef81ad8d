import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ExecCommand } from '../../src/template/exec-command.js';
import { renderExec } from '../../src/template/exec-command.js';
import { checkGroupTemplate, renderGroup, type GroupMode } from '../../src/template/group-command.js';
import type { TemplateTask } from '../../src/template/template-task.js';

let work: string;
beforeEach(() => {
  work = realpathSync(mkdtempSync(join(tmpdir(), 'sd-group-')));
});
afterEach(() => {
  rmSync(work, { recursive: true, force: true });
});

const MODES: GroupMode[] = ['n', 'm', 'X', 'N'];
/** A printf that is no shell builtin, so a template that starts with it is a simple command, run with no shell. */
const PRINTF = '/usr/bin/printf';

/** Items of a list, numbered from 1, in slot 1 (GNU parallel's -j1). */
function items(texts: string[], slot = 1): TemplateTask[] {
  return texts.map((item, i) => ({
    key: `k${i + 1}`,
    batch: 'b',
    stage: 'main',
    seq: i + 1,
    attempt: 1,
    slot,
    inputs: {},
    payload: { version: 1, path: '/list.txt', rel: 'list.txt', item },
  }));
}

function groupsOf<T>(all: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < all.length; i += size) out.push(all.slice(i, i + size));
  return out;
}

/** What the command prints, run as rendered (its argv, with or without a shell) in the scratch dir. */
function run(cmd: ExecCommand): string {
  return execFileSync(cmd.argv[0]!, cmd.argv.slice(1), { cwd: work, encoding: 'utf8' });
}

/** What its fallback line prints under /bin/sh -c (null when the argv already is the shell). */
function runFallback(cmd: ExecCommand): string | null {
  return cmd.fallback === null ? null : execFileSync('/bin/sh', ['-c', cmd.fallback], { cwd: work, encoding: 'utf8' });
}

/** GNU parallel's output for the same template and items, one job at a time, in order. */
function parallel(flags: string[], template: string, texts: string[]): string {
  return execFileSync('parallel', ['--will-cite', '-k', '-j1', ...flags, template, ':::', ...texts], { cwd: work, encoding: 'utf8' });
}

describe('renderGroup: each mode beside GNU parallel', () => {
  // Six items, so every group of two is full (parallel drops a {2} past the end; we pass '').
  const TEXTS = ['a/b.c', 'd e/f', "g'h.i", '3', 'x/y z.tar.gz', '-n'];
  const cases: [GroupMode, string[], string][] = [
    ['n', ['-n2'], `${PRINTF} '<%s>\\n' pic{}.jpg {/.} {%}`],
    ['n', ['-n2'], `printf '<%s>\\n' {} "{/}" | cat`],
    ['m', ['-m', '-n2'], `${PRINTF} '<%s>\\n' pic{}.jpg "{.}" {%}`],
    ['m', ['-m', '-n2'], `printf '<%s>\\n' {//} '{}' >&1`],
    ['X', ['-X', '-n2'], `${PRINTF} '<%s>\\n' x{.}y "{/}" {//} {%}`],
    // A space before the ;: parallel's -X repeats a word `{.};` with its `;`, running every item but the last as a command.
    ['X', ['-X', '-n2'], `printf '<%s>\\n' {} {.} ; printf '[%s]\\n' "{/.}"`],
    ['N', ['-N2'], `${PRINTF} '<%s>\\n' {} {2/.} x{1//}y {1} pre{2.}`],
    ['N', ['-N2'], `printf '<%s>\\n' {2} x{1.}y "{}" {%} | cat`],
  ];
  for (const [mode, flags, template] of cases) {
    it(`${flags.join(' ')} ${template}`, () => {
      const ours = groupsOf(items(TEXTS), 2).map((group) => renderGroup(template, group, mode));
      expect(ours.map((cmd) => cmd.argv[0] === '/bin/sh')).toEqual(ours.map(() => !template.startsWith(PRINTF)));
      // parallel quotes every value for a bare word only ("{}" breaks on an item with a '): give it the bare placeholders.
      const expected = parallel(flags, template.replace(/(["'])(\{[^}]*\})\1/g, '$2'), TEXTS);
      expect(ours.map(run).join('')).toBe(expected);
      if (template.startsWith(PRINTF)) expect(ours.map(runFallback).join('')).toBe(expected);
    });
  }

  it('a part of a word spreads under -n/-m/-N and is repeated under -X; a word with two item placeholders is repeated in every mode', () => {
    const group = items(['1', '2', '3']);
    const argv = (mode: GroupMode, template: string) => renderGroup(template, group, mode).argv.slice(1);
    expect(argv('n', 'cp pic{}.jpg')).toEqual(['pic1', '2', '3.jpg']);
    expect(argv('m', 'cp pic{}.jpg')).toEqual(['pic1', '2', '3.jpg']);
    expect(argv('N', 'cp pic{}.jpg')).toEqual(['pic1', '2', '3.jpg']);
    expect(argv('X', 'cp pic{}.jpg')).toEqual(['pic1.jpg', 'pic2.jpg', 'pic3.jpg']);
    for (const mode of MODES) expect(argv(mode, 'cp {}-{#}')).toEqual(['1-1', '2-2', '3-3']);
  });
});

describe('renderGroup: the group placeholders, -N positions, and a template without item placeholders', () => {
  it('{%}, {batch} and {stage} render once, from the first task; {#}, {attempt} and {key} are each item\'s', () => {
    const group = items(['a', 'b'], 2);
    group[1]!.attempt = 3;
    for (const mode of MODES) {
      expect(renderGroup('cp {%} {batch} {stage} {#} {attempt} {key}', group, mode).argv).toEqual(['cp', '2', 'b', 'main', '1', '2', '1', '3', 'k1', 'k2']);
    }
  });

  it('under -N, {k} and its path forms are the group\'s k-th item, read as {} {.} {/} {//} {/.} read it, and empty past the group\'s end', () => {
    const group = items(['dir one/a.tar.gz', 'b 1'], 1);
    expect(renderGroup('cp {1} {1.} {1/} {1//} {1/.} {2} {3} x{4}y', group, 'N').argv).toEqual(['cp', 'dir one/a.tar.gz', 'dir one/a.tar', 'a.tar.gz', 'dir one', 'a.tar', 'b 1', '', 'xy']);
    expect(renderGroup('cp {2} "{3}" | cat', group, 'N').argv[2]).toBe(`cp 'b 1' '' | cat`);
    // Under the other modes {1} is each item's field 1, as it is for one item.
    expect(renderGroup('cp {1} {2}', group, 'n').argv).toEqual(['cp', 'dir', 'b', 'one/a.tar.gz', '1']);
    expect(renderGroup('cp {1} {2}', group, 'X').argv).toEqual(['cp', 'dir', 'b', 'one/a.tar.gz', '1']);
  });

  it('a template without item placeholders runs as written, once: the items are not appended (unlike GNU parallel)', () => {
    const group = items(['a', 'b', 'c']);
    for (const mode of MODES) {
      expect(renderGroup('sleep 0', group, mode)).toEqual({ argv: ['sleep', '0'], fallback: 'sleep 0' });
      expect(renderGroup('echo hi {%}', group, mode)).toEqual({ argv: ['/bin/sh', '-c', "echo hi '1'"], fallback: null });
    }
  });

  it('a group of one renders as renderExec renders its task under -n, -m and -X', () => {
    const [task] = items(["it's a/b.c"]);
    const templates = ['gzip -k {}', 'cp pic{}.jpg "{/.}.out" {1} x{2}y {#}', 'echo "{}" x | cat', "wc -c '{}' > {.}", 'printf %s "$(cat {})" {%}'];
    for (const template of templates) {
      for (const mode of ['n', 'm', 'X'] as const) expect(renderGroup(template, [task!], mode), `${mode} ${template}`).toEqual(renderExec(template, task!));
    }
  });
});

describe('renderGroup: hostile items stay exact arguments in every mode, with or without a shell', () => {
  const HOSTILE = [`it's`, `"dq"`, '$(touch x)', '`touch x`', 'a;touch x', 'l1\nl2', ' sp  ace ', '-n', '*', '', ' ', '\\', "'", '--', 'a&&touch x|', '{}', '\t'];

  /** The arguments after the format that `printf '%s\0'` received. */
  const args = (out: string) => out.split('\0').slice(0, -1);

  for (const mode of MODES) {
    it(`-${mode}: argv, fallback and shell line pass every item exactly; nothing runs`, () => {
      const group = items(HOSTILE);
      const simple = renderGroup(`${PRINTF} '%s\\0' {} pre{}post "{}"`, group, mode);
      const spread = mode === 'X' ? HOSTILE.map((v) => `pre${v}post`) : [`pre${HOSTILE[0]}`, ...HOSTILE.slice(1, -1), `${HOSTILE.at(-1)}post`];
      expect(simple.argv.slice(2)).toEqual([...HOSTILE, ...spread, ...HOSTILE]);
      expect(args(run(simple))).toEqual([...HOSTILE, ...spread, ...HOSTILE]);
      expect(args(runFallback(simple)!)).toEqual([...HOSTILE, ...spread, ...HOSTILE]);

      const shell = renderGroup(`printf '%s\\0' {} "{}" '{}' | cat; printf '%s\\0' "$(printf '%s\\n' {})"`, group, mode);
      expect(shell.argv.slice(0, 2)).toEqual(['/bin/sh', '-c']);
      // The last printf gets the items' lines as one argument; $(…) drops its trailing newline.
      expect(args(run(shell))).toEqual([...HOSTILE, ...HOSTILE, ...HOSTILE, `${HOSTILE.join('\n')}`.replace(/\n+$/, '')]);
      expect(readdirSync(work)).toEqual([]);
    });
  }
});

describe('checkGroupTemplate: refusals at plan time, PermanentError at render time', () => {
  /** The message of the UsageError `refusal` throws. */
  function messageOf(refusal: () => void): string {
    expect(refusal).toThrow(expect.objectContaining({ name: 'UsageError' }));
    try {
      refusal();
    } catch (err) {
      return (err as Error).message;
    }
    return '';
  }

  const INSIDE_A_WORD: [string, string, string][] = [
    ['x={} sh -c \'echo "$x"\'', '{}', 'x={}'],
    ['echo pre{}post | cat', '{}', 'pre{}post'],
    ['echo "a{}b" >&2', '{}', '"a{}b"'],
    ['echo "a {}"; true', '{}', '"a {}"'],
    ["echo '{}'.txt;", '{}', "'{}'.txt"],
    ['echo a\\ {} | cat', '{}', 'a\\ {}'],
    ['echo $(cat){} | cat', '{}', '$(cat){}'],
    ['echo {}{%} | cat', '{}', '{}{%}'],
    ['echo {/.}.out | cat', '{/.}', '{/.}.out'],
    ['echo {#}x | cat', '{#}', '{#}x'],
  ];
  for (const [template, ph, word] of INSIDE_A_WORD) {
    it(`refuses ${template}`, () => {
      for (const mode of MODES) {
        const message = messageOf(() => checkGroupTemplate(template, mode, '--exec'));
        expect(message.replace(/\n/g, ' ')).toContain(`--exec with -${mode}: ${ph} stands inside a word (${word}) in a template that runs through the shell`);
        expect(message).toMatch(/leave\s-[nmXN]\sout/);
        for (const line of message.split('\n')) expect(line.length).toBeLessThanOrEqual(80);
        expect(() => renderGroup(template, items(['a', 'b']), mode)).toThrow(expect.objectContaining({ name: 'PermanentError', message }));
      }
    });
  }

  it('accepts an item placeholder as a word of its own in a shell template, and anywhere in a simple command', () => {
    for (const template of ['echo {} | cat', 'cat <{} >{}', 'echo "{}" "$(cat {})"; (echo {})', 'echo {}&& echo {};', 'cp pre{}post "a {}" x={}', 'echo\t{}\n']) {
      for (const mode of MODES) expect(() => checkGroupTemplate(template, mode, '--exec'), `${mode} ${template}`).not.toThrow();
    }
    // Under -N, {1} is one value, which may stand inside a word; {} is every item's.
    expect(() => checkGroupTemplate('echo x{1}y{2.} | cat', 'N', '--exec')).not.toThrow();
    expect(() => checkGroupTemplate('echo x{}y | cat', 'N', '--exec')).toThrow(/-N: \{\} stands inside a word[\s\S]*name\sthe\sitems\sone\sby\sone/);
    expect(() => checkGroupTemplate('echo x{1}y | cat', 'n', '--exec')).toThrow(/-n: \{1\} stands inside a word/);
  });

  it('refuses {out}, simple command or not, in every mode', () => {
    for (const template of ['gzip -c {} -o {out}', 'gzip -c {} > {out}']) {
      for (const mode of MODES) {
        const message = messageOf(() => checkGroupTemplate(template, mode, 'stage "z"\'s exec'));
        expect(message.replace(/\n/g, ' ')).toBe(`stage "z"'s exec with -${mode}: {out} is the declared output of one item, and declared outputs need one item per command: leave -${mode} out, or drop --output`);
        expect(() => renderGroup(template, items(['a']), mode)).toThrow(expect.objectContaining({ name: 'PermanentError' }));
      }
    }
  });

  it('leaves the general refusals to their own words, as usage errors', () => {
    expect(() => checkGroupTemplate('echo {nmae}', 'X', 'stage "s"\'s exec')).toThrow(/^stage "s"'s exec "echo \{nmae\}": \{nmae\} is not a placeholder/);
    expect(() => checkGroupTemplate('echo "{}', 'n', '--exec')).toThrow(expect.objectContaining({ name: 'UsageError', message: expect.stringMatching(/never closed/) }));
  });
});
