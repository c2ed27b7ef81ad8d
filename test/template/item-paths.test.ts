import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { placeholderValue } from '../../src/template/exec-template.js';
import { placeholderAt } from '../../src/template/placeholder.js';
import type { TemplateTask } from '../../src/template/template-task.js';

/** Issue 41, item 1: an item's path placeholders read the item's text as a path, as GNU parallel does (SPEC §3). */

/** Edge cases of a path as text: no slash, a trailing dot or slash, hidden files, a dot in a folder, absolute, doubled slashes. */
const VALUES = [
  'tree/sub/one.txt', 'a.txt', 'a.', '.bashrc', 'a.b/c', '/abs/x.tar.gz', '/x', 'x/', './a.txt', 'a..b', 'dir.d/.hid',
  '/', 'a b.txt', '..', '.', 'sub/.bashrc.txt', 'a/b/', 'a//b.c', '.a.b', 'x/.', 'a.b.', '~/x.y', '//', '///a//', '0/x', './', '../x',
];

const task = (item: string, colsep?: string): TemplateTask => ({
  key: item,
  batch: 'b',
  stage: '',
  seq: 1,
  attempt: 1,
  payload: { version: 1, path: '-', rel: '-', item, ...(colsep === undefined ? {} : { colsep }) },
  inputs: {},
});

const value = (text: string, t: TemplateTask) => placeholderValue(placeholderAt(text, 0)!, t);

/** What GNU parallel gives for each replacement string of each argument, one line per argument. */
function parallelSays(strings: string[], args: string[], colsep?: string): string[][] {
  const out = execFileSync('parallel', ['--will-cite', '-k', ...(colsep ? ['--colsep', colsep] : []), 'printf', "'%s\\0'", ...strings, ':::', ...args], { encoding: 'utf8' });
  const cells = out.split('\0').slice(0, -1);
  return args.map((_, i) => cells.slice(i * strings.length, (i + 1) * strings.length));
}

describe("an item's path placeholders", () => {
  it('{.} {/} {//} {/.} of an item are what GNU parallel gives for the same text, edge cases included', () => {
    const forms = ['{.}', '{/}', '{//}', '{/.}'];
    const theirs = parallelSays(forms, VALUES);
    const ours = VALUES.map((v) => forms.map((f) => value(f, task(v))));
    expect(ours).toEqual(theirs);
    // The cases the issue names.
    expect(value('{.}', task('tree/sub/one.txt'))).toBe('tree/sub/one');
    expect(value('{//}', task('a.txt'))).toBe('.');
  });

  it('{name} {stem} {dir} are {/} {/.} {//}; {ext} is what {.} takes off, its dot kept; {rel} and {} are the text (a file keeps its own)', () => {
    for (const v of VALUES) {
      const t = task(v);
      expect([value('{name}', t), value('{stem}', t), value('{dir}', t)], v).toEqual([value('{/}', t), value('{/.}', t), value('{//}', t)]);
      expect(value('{.}', t) + value('{ext}', t), v).toBe(v);
      expect([value('{rel}', t), value('{}', t)], v).toEqual([v, v]);
    }
    expect(value('{ext}', task('tree/sub/one.txt'))).toBe('.txt');
    // A file of a folder source keeps its own.
    const t: TemplateTask = { ...task('x'), payload: { version: 1, path: '/data/logs/app.log', rel: 'logs/app.log' } };
    expect(['{.}', '{/}', '{//}', '{/.}', '{ext}', '{rel}'].map((f) => value(f, t))).toEqual(['/data/logs/app', 'app.log', '/data/logs', 'app', '.log', 'logs/app.log']);
  });

  it('per field, {1.} {2/} {2//} {1/.} {2.} are what GNU parallel gives with --colsep', () => {
    // (A missing field is left out here: parallel then passes no argument at all, splitdance an empty one.)
    const rows = ['tree/sub/one.txt,/abs/x.tar.gz', 'a.txt,.bashrc', 'x/,a.b/c', 'a.b,'];
    const forms = ['{1}', '{1.}', '{1/}', '{1//}', '{1/.}', '{2}', '{2.}', '{2/}', '{2//}', '{2/.}'];
    const theirs = parallelSays(forms, rows, ',');
    const ours = rows.map((r) => forms.map((f) => value(f, task(r, ','))));
    expect(ours).toEqual(theirs);
  });
});
