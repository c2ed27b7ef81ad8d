import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/cli.js';
import { allAttempts, tasksJson } from '../helpers/json-views.js';
import { mainIn } from '../helpers/in-process-cli.js';

// File names that break a template quoted the wrong way for where its placeholder stands.
const NAMES = ['$(touch PWNED).log', `it's a "quoted" name.log`, '`touch PWNED2` \\ back.log', 'plain.log'];

/** Every file anywhere under dir (recursively), so a stray PWNED is found wherever it lands. */
function allFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' });
}

describe('--exec quoting follows where the placeholder stands (SPEC §4)', () => {
  it('wc -c "{}", wc -c \'{}\' and wc -c {}: every task succeeds, the command sees the exact path, nothing runs', async () => {
    const dir = tempDir();
    const src = join(dir, 'src');
    mkdirSync(src);
    for (const name of NAMES) writeFileSync(join(src, name), name); // content = name: its size is the name's length

    const templates = ['wc -c "{}"', "wc -c '{}'", 'wc -c {}', 'test "$(cat "{}")" = "{name}"'];
    for (const [i, template] of templates.entries()) {
      const r = await mainIn(dir, ['run', 'src', '--exec', template, '--batch', `b${i}`, '--retries', '0']);
      expect(r.code, `${template}\n${r.stderr}`).toBe(0);
    }

    const rows: { batch: string; task_key: string; status: string; output_tail: string | null }[] = [];
    for (const batch of templates.map((_, i) => `b${i}`)) {
      const status = new Map((await tasksJson(dir, ['--batch', batch])).map((t) => [t.key, t.status]));
      for (const a of await allAttempts(dir, ['--batch', batch])) rows.push({ batch, task_key: a.key, status: status.get(a.key)!, output_tail: a.outputTail });
    }
    expect(rows).toHaveLength(templates.length * NAMES.length); // one attempt each: none failed, none retried
    for (const row of rows) {
      expect(row.status, `${row.batch} ${row.task_key}`).toBe('SUCCESS');
      const path = join(src, row.task_key);
      // wc printed the exact path it was given; the `test` template prints nothing
      expect(row.output_tail).toBe(row.batch === 'b3' ? null : `${Buffer.byteLength(row.task_key)} ${path}\n`);
    }
    const shown = JSON.parse((await mainIn(dir, ['show', '$(touch PWNED).log', '--batch', 'b0', '--json'])).stdout);
    expect(shown.attempts[0].outputTail).toBe(`18 ${join(src, '$(touch PWNED).log')}\n`);

    expect(allFiles(dir).filter((f) => f.includes('PWNED') && !f.startsWith('src/'))).toEqual([]);
    // Commands called in-process run in this process's folder: nothing landed there either.
    expect(readdirSync(process.cwd()).filter((f) => f.includes('PWNED'))).toEqual([]);
    expect(readdirSync(src).sort()).toEqual([...NAMES].sort());
  });

  it('a template whose quotes do not close, or with a placeholder inside backquotes: exit 2, no store created', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'a.log'), 'a');
    for (const [template, message] of [
      ['wc -c "{}', /--exec template: the quote " at character 7 is never closed/],
      ["wc -c '{}", /--exec template: the quote ' at character 7 is never closed/],
      ['echo $(cat {}', /the \$\( at character 6 is never closed/],
      ['wc -c `ls {}`', /\{\} stands inside `…`.*write \$\(…\) instead of backquotes/],
    ] as const) {
      const r = await mainIn(dir, ['run', 'src', '--exec', template]);
      expect(r.code, template).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(existsSync(join(dir, '.splitdance')), template).toBe(false);
    }
  });
});

describe('a word a second shell reads again as code', () => {
  it('sh -c --, eval, trap, su -c, ssh and wrapped shells: exit 2 before anything runs; a file named x;touch PWNED creates nothing', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'x;touch PWNED'), 'a');
    for (const [template, message] of [
      ['sh -c -- "cat {}"', /\{\} stands inside the script of a shell's -c/],
      ['bash -c -- "cat {}"', /\{\} stands inside the script of a shell's -c/],
      ['eval cat {}', /\{\} stands in an argument of eval, trap/],
      ['command eval "cat {}"', /\{\} stands in an argument of eval, trap/],
      ['trap "cat {}" EXIT', /\{\} stands in an argument of eval, trap/],
      ['env -i sh -c "cat {}"', /script of a shell's -c/],
      ['xargs sh -c "cat {}" < /dev/null', /script of a shell's -c/],
      ['find . -maxdepth 0 -exec sh -c "cat {}" \\;', /script of a shell's -c/],
      ['nice -n 1 timeout 5 nohup bash -O extglob -c "cat {}"', /script of a shell's -c/],
      ['su -c "cat {}"', /script of a shell's -c/],
      ['ssh localhost cat {}', /the command ssh hands to the remote shell/],
    ] as const) {
      const r = await mainIn(dir, ['run', 'src', '--exec', template]);
      expect(r.code, template).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(existsSync(join(dir, '.splitdance')), template).toBe(false);
    }
    expect(allFiles(dir).filter((f) => f.includes('PWNED') && !f.includes(';'))).toEqual([]);
    // The fix the message gives runs the file exactly.
    const ok = await mainIn(dir, ['run', 'src', '--exec', `sh -c -- 'cat -- "$1"' _ {}`]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(allFiles(dir).filter((f) => f.includes('PWNED') && !f.includes(';'))).toEqual([]);
    expect(readdirSync(process.cwd()).filter((f) => f.includes('PWNED'))).toEqual([]);
  });
});
