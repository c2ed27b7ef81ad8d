import Database from 'better-sqlite3';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderExec } from '../../src/template/exec-command.js';
import { unknownPlaceholder } from '../../src/template/placeholder-attempts.js';
import { tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { dbPathIn, query } from '../helpers/store.js';

/** Issue 41, item 8: a `{…}` meant as a placeholder that is none is exit 2 before anything is written, never run as written. */

describe('brace texts meant as placeholders', () => {
  it('are found (typos, GNU parallel spellings splitdance lacks, Perl expressions); braces of other languages are not', () => {
    const found = {
      'echo {nmae}': '{nmae}',
      'gzip {} > out/{stme}.gz': '{stme}',
      'echo {= s/a/b/ =} {}': '{= s/a/b/ =}',
      'echo {=1=}': '{=1=}',
      'echo {##}': '{##}',
      'echo {+/} {}': '{+/}',
      'echo {0#}': '{0#}',
      'echo {-1}': '{-1}',
      'echo {..}': '{..}',
      'echo {1./}': '{1./}',
      'echo {0}': '{0}',
      "awk '{print}' {}": '{print}',
      'echo {item.id} {stage.x}': '{stage.x}',
      'cp {} out_{nmae}': '{nmae}',
    };
    for (const [template, text] of Object.entries(found)) expect(unknownPlaceholder(template), template).toBe(text);
    // Braces of shell, awk, jq, curl and Go templates are no placeholder meant, nor is any known placeholder.
    const untouched = [
      "awk '{print $1}' {}",
      "awk 'NR>1{n++}END{print n}' {}",
      "awk '{x=1} { next }' {}",
      'echo ${HOME} {}',
      'cp {} {}.{bak,orig}',
      'echo {1..5} {a..e} {}',
      "curl -s -w '%{http_code}' {}",
      'git log @{u} -- {}',
      "ruby -e 'puts \"#{1}\"' {}",
      "docker inspect -f '{{.State.Status}}' {}",
      "jinja '{{ x }}' {}",
      "jq '{ id }' {}",
      'find {} -name x -exec echo {} \\;',
      'sh -c \'{ echo a; echo b; }\'',
      '{} {key} {rel} {name} {stem} {ext} {dir} {start} {end} {attempt} {batch} {stage} {item} {.} {/} {//} {/.} {#} {%} {1} {12} {1.} {1/} {1//} {1/.} {item.a.b} {inputs.s.out}',
      'echo {',
      'echo }',
      'echo {}}',
    ];
    for (const template of untouched) expect(unknownPlaceholder(template), template).toBeNull();
  });

  it('a run is exit 2 naming the template, the flag and the placeholder meant; nothing is written', async () => {
    const dir = tempDir('sd-unknown-');
    writeFileSync(join(dir, 'list.txt'), 'a\nb\n');
    const cases: [string[], RegExp][] = [
      [['--exec', 'echo {nmae}'], /--exec "echo \{nmae\}": \{nmae\} is not a placeholder \(did you mean \{name\}\?\)/],
      [['--exec', "awk '{print}' {}"], /\{print\} is not a placeholder; if it is code of another language \(awk, sed, jq…\), put a space inside: \{ print \}/],
      [['--exec', 'echo {= s/a/b/ =}'], /\{= s\/a\/b\/ =\} is GNU parallel's Perl expression, which splitdance does not run: compute the value in the shell, e\.g\. --exec 'f=\{\}; gzip -c "\$f" > "\$\{f%\.log\}\.gz"', or write a handler module \(--handler\)/],
      [['--exec', 'echo {##} {}'], /\{##\} is GNU parallel's number of jobs.*N=\$\(wc -l < list\.txt\) splitdance run/],
      [['--exec', 'echo {+/}'], /\{\+\/\} is not one of splitdance's placeholders \(did you mean \{\/\}\?\); they are listed in splitdance run --help/],
      [['--exec', 'cat {} > {out}', '--output', 'out/{stme}.txt'], /--output "out\/\{stme\}\.txt": \{stme\} is not a placeholder \(did you mean \{stem\}\?\)/],
    ];
    for (const [flags, message] of cases) {
      const r = await mainIn(dir, ['run', '--items', 'list.txt', ...flags]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(existsSync(join(dir, '.splitdance')), r.stderr).toBe(false);
    }
  });

  it('a job file\'s "exec" and a stage\'s are named where they stand', async () => {
    const dir = tempDir('sd-unknown-');
    writeFileSync(join(dir, 'list.txt'), 'a\n');
    writeFileSync(join(dir, 'job.json'), JSON.stringify({ items: 'list.txt', exec: 'echo {nmae}' }));
    const r = await mainIn(dir, ['run', '--job', 'job.json']);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/"exec" of \S*job\.json "echo \{nmae\}": \{nmae\} is not a placeholder \(did you mean \{name\}\?\)/);
    writeFileSync(join(dir, 'stages.json'), JSON.stringify({ items: 'list.txt', stages: [{ name: 'one', exec: 'echo {}' }, { name: 'two', needs: ['one'], exec: 'echo {itme}' }] }));
    const s = await mainIn(dir, ['run', '--job', 'stages.json']);
    expect(s.code, s.stderr).toBe(2);
    expect(s.stderr).toMatch(/stage "two"'s exec "echo \{itme\}": \{itme\} is not a placeholder \(did you mean \{item\}\?\)/);
    expect(existsSync(join(dir, '.splitdance')), s.stderr).toBe(false);
  });

  it("a batch stored by an older version with such a template: run is exit 2 naming the stored --exec, the store untouched; an attempt of it fails for good", async () => {
    const dir = tempDir('sd-unknown-');
    writeFileSync(join(dir, 'list.txt'), 'a\nb\nc\n');
    const first = await mainIn(dir, ['run', '--items', 'list.txt', '--batch', 'old', '--exec', 'echo {name}', '--sample', '1', '--quiet']);
    expect(first.code, first.stderr).toBe(0);
    const db = new Database(dbPathIn(dir));
    db.prepare("UPDATE batches SET job = replace(job, '{name}', '{nmae}')").run();
    db.close();
    const snapshot = () => JSON.stringify([query(dbPathIn(dir), 'SELECT * FROM batches'), query(dbPathIn(dir), 'SELECT * FROM tasks'), query(dbPathIn(dir), 'SELECT * FROM attempts')]);
    const before = snapshot();
    const r = await mainIn(dir, ['run', '--items', 'list.txt', '--batch', 'old']);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/the stored --exec of batch old "echo \{nmae\}": \{nmae\} is not a placeholder \(did you mean \{name\}\?\)/);
    expect(snapshot()).toBe(before);
    // A worker renders what is stored: no attempt of it can run as meant.
    const task = { key: 'a', batch: 'old', stage: '', seq: 1, attempt: 1, payload: { version: 1 as const, path: '-', rel: '-', item: 'a' }, inputs: {} };
    expect(() => renderExec('echo {nmae}', task)).toThrow(/\{nmae\} is not a placeholder/);
    expect(() => renderExec('echo {nmae}', task)).toThrow(expect.objectContaining({ name: 'PermanentError' }));
  });
});
