import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { renderExec } from '../../src/template/exec-command.js';
import { checkTemplate, shellQuote } from '../../src/template/exec-template.js';
import type { TemplateTask } from '../../src/template/template-task.js';

let work: string;
beforeEach(() => {
  work = realpathSync(mkdtempSync(join(tmpdir(), 'sd-exec-')));
});
afterEach(() => {
  rmSync(work, { recursive: true, force: true });
});

function task(over: Omit<Partial<TemplateTask>, 'payload'> & { payload?: Partial<TemplateTask['payload']> } = {}): TemplateTask {
  const { payload, ...rest } = over;
  return {
    key: '2025/01/app.log',
    batch: 'nightly',
    stage: 'main',
    seq: 42,
    attempt: 2,
    output: null,
    inputs: {},
    ...rest,
    payload: { version: 1, path: '/data/src/2025/01/app.log', rel: '2025/01/app.log', ...payload },
  };
}

/** The task's command as one shell line (the line sh runs, or a direct argv's fallback): what the template renders to. */
function renderTemplate(template: string, t: TemplateTask): string {
  const { argv, fallback } = renderExec(template, t);
  return fallback ?? argv[2]!;
}

/** The argv run without a shell, or null when the command runs under /bin/sh -c. */
function directArgv(template: string, t: TemplateTask): string[] | null {
  const { argv, fallback } = renderExec(template, t);
  return fallback === null ? null : argv;
}

/** Runs a command line with the real /bin/sh in the scratch dir; returns stdout. */
function sh(command: string, cwd = work): string {
  return execFileSync('/bin/sh', ['-c', command], {
    cwd,
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: '/nonexistent-home' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Renders `printf '%s\0' <template>` for the task, runs it and returns the arguments it received. */
function run(template: string, t: TemplateTask): string[] {
  const rendered = renderTemplate(`printf '%s\\0' ${template}`, t);
  const out = sh(rendered);
  return out.split('\0').slice(0, -1);
}

const hostileNames = [
  "it's.log",
  "a'b $(touch x);.log",
  '$(touch pwned).log',
  '`touch pwned2`.log',
  'semi;touch pwned3;.log',
  'pipe|touch pwned4.log',
  'new\nline.log',
  'tab\tand  two  spaces.log',
  '-rf',
  '--help.log',
  '&& touch pwned5 &&.log',
  '> pwned6.log',
  '$HOME ${PATH} "dq" \\back.log',
  '* ? [a-z] ~.log',
  "''''.log",
  '\'"\'"\'.log',
  'emoji 🚀 café cafe\u0301 日本.log',
  '!!.log',
];

describe('renderExec: hostile names through a real /bin/sh', () => {
  for (const name of hostileNames) {
    it(`passes ${JSON.stringify(name)} as one exact argument and runs nothing`, () => {
      const dir = join(work, 'in dir $(touch pwned-dir)');
      const path = join(dir, name);
      const t = task({ key: name, payload: { path, rel: name } });
      const before = readdirSync(work).sort();
      expect(run('{}', t)).toEqual([path]);
      expect(run('{key}', t)).toEqual([name]);
      expect(run('{rel}', t)).toEqual([name]);
      expect(run('{name}', t)).toEqual([name]);
      expect(run('{/}', t)).toEqual([name]);
      expect(run('{dir}', t)).toEqual([dir]);
      expect(run('{//}', t)).toEqual([dir]);
      expect(run('x{}y {name}', t)).toEqual([`x${path}y`, name]);
      // nothing was created by any of those runs
      expect(readdirSync(work).sort()).toEqual(before);
    });
  }

  it('the same hostile names run against real files: cat reads exactly that file', () => {
    const src = join(work, 'src');
    mkdirSync(src);
    for (const name of hostileNames) {
      const path = join(src, name);
      writeFileSync(path, `content of ${name}`);
      const t = task({ key: name, payload: { path, rel: name } });
      expect(sh(renderTemplate('cat {}', t))).toBe(`content of ${name}`);
      expect(sh(renderTemplate('cat -- {rel}', t), src)).toBe(`content of ${name}`);
    }
    expect(readdirSync(work)).toEqual(['src']);
    expect(readdirSync(src).sort()).toEqual([...hostileNames].sort());
  });

  it('a hostile batch name is quoted too', () => {
    const batch = "b'; touch pwned; echo '";
    expect(run('{batch}', task({ batch }))).toEqual([batch]);
    expect(readdirSync(work)).toEqual([]);
  });
});

describe('renderExec: placeholders (SPEC §4)', () => {
  const t = task({
    key: 'big.tar.gz:00003',
    seq: 7,
    attempt: 3,
    batch: 'b-1',
    payload: { path: '/srv/data/in/archive.tar.gz', rel: 'in/archive.tar.gz', start: 1024, end: 4096 },
  });

  const cases: [string, string][] = [
    ['{}', '/srv/data/in/archive.tar.gz'],
    ['{key}', 'big.tar.gz:00003'],
    ['{rel}', 'in/archive.tar.gz'],
    ['{name}', 'archive.tar.gz'],
    ['{stem}', 'archive.tar'],
    ['{ext}', '.gz'],
    ['{dir}', '/srv/data/in'],
    ['{start}', '1024'],
    ['{end}', '4096'],
    ['{attempt}', '3'],
    ['{batch}', 'b-1'],
    ['{.}', '/srv/data/in/archive.tar'],
    ['{/}', 'archive.tar.gz'],
    ['{//}', '/srv/data/in'],
    ['{/.}', 'archive.tar'],
    ['{#}', '7'],
  ];
  for (const [placeholder, value] of cases) {
    it(`${placeholder} → ${JSON.stringify(value)}`, () => {
      expect(renderTemplate(`echo ${placeholder}`, t)).toBe(`echo ${shellQuote(value)}`);
      expect(run(placeholder, t)).toEqual([value]);
    });
  }

  it('renders every placeholder in one template, in order', () => {
    const template = cases.map(([p]) => p).join(' ');
    expect(run(template, t)).toEqual(cases.map(([, v]) => v));
  });

  it('{ext} keeps its dot; stem and {.} drop only the last extension', () => {
    const l = task({ payload: { path: '/x/y/app.log', rel: 'y/app.log' } });
    expect(run('{ext} {stem} {.} {/.}', l)).toEqual(['.log', 'app', '/x/y/app', 'app']);
  });

  it('a file without extension: {ext} is empty, {.} is the path', () => {
    const n = task({ payload: { path: '/x/Makefile', rel: 'Makefile' } });
    expect(run('{ext} {stem} {.} {/.}', n)).toEqual(['', 'Makefile', '/x/Makefile', 'Makefile']);
  });

  it('a dotfile has no extension', () => {
    const d = task({ payload: { path: '/x/.bashrc', rel: '.bashrc' } });
    expect(run('{ext} {stem} {.}', d)).toEqual(['', '.bashrc', '/x/.bashrc']);
  });

  it('a dot in a directory name is not an extension', () => {
    const d = task({ payload: { path: '/x/v1.2/README', rel: 'v1.2/README' } });
    expect(run('{ext} {.} {dir}', d)).toEqual(['', '/x/v1.2/README', '/x/v1.2']);
  });

  it('{start} and {end} are empty (but still one argument each) for a whole file', () => {
    const w = task();
    expect(run('{start} {end}', w)).toEqual(['', '']);
  });

  it('{start} 0 is rendered, not treated as missing', () => {
    const c = task({ payload: { start: 0, end: 10 } });
    expect(run('{start} {end}', c)).toEqual(['0', '10']);
  });

  it('the same placeholder may appear many times', () => {
    expect(run('{#} {#} {name}{ext}', task({ seq: 1 }))).toEqual(['1', '1', 'app.log.log']);
  });

  it('placeholders work inside a larger shell command with pipes and redirections', () => {
    const t2 = task({ key: "o'k", payload: { path: join(work, "in'put.txt"), rel: "in'put.txt" } });
    writeFileSync(t2.payload.path, 'hello\nworld\n');
    const cmd = renderTemplate('wc -l < {} | tr -d " " > {dir}/{/.}.count && cat {dir}/{/.}.count', t2);
    expect(sh(cmd).trim()).toBe('2');
    expect(readdirSync(work).sort()).toEqual(["in'put.count", "in'put.txt"]);
  });

  it('braces no placeholder is meant by are left alone (awk programs, { foo })', () => {
    const p = join(work, 'cols.txt');
    writeFileSync(p, 'a b\nc d\n');
    const t3 = task({ payload: { path: p, rel: 'cols.txt' } });
    const rendered = renderTemplate("awk '{print $2}' {}", t3);
    expect(rendered).toBe(`awk '{print $2}' ${shellQuote(p)}`);
    expect(sh(rendered)).toBe('b\nd\n');
    expect(renderTemplate('echo { foo } {{}}', t3)).toBe(`echo { foo } {${shellQuote(p)}}`);
  });
});

// The brief asked for "a template with no placeholder gets the path appended" (GNU parallel);
// src/template/exec-template.ts was changed (12:44) to run such a template as written, with the
// path in $SPLITDANCE_PATH instead. SPEC §4 says neither; these tests pin the current source.
describe('renderExec: no placeholder', () => {
  it('runs the template exactly as written (nothing appended)', () => {
    const t = task({ payload: { path: "/d/it's here.log", rel: "it's here.log" } });
    expect(renderTemplate('sleep 0', t)).toBe('sleep 0');
    expect(renderTemplate("awk '{print $2}'", t)).toBe("awk '{print $2}'");
    expect(sh(renderTemplate('echo ran', t))).toBe('ran\n');
  });

  it('quotes only the placeholders when any is used', () => {
    const t = task();
    expect(renderTemplate('echo {#}', t)).toBe("echo '42'");
    expect(run('{name}', t)).toEqual(['app.log']);
  });
});

describe('shellQuote and checkTemplate', () => {
  it('round-trips arbitrary strings through /bin/sh', () => {
    for (const s of ['', "'", "''", 'a\nb', '\\', '$(x)', '`x`', '"', '\t', '-n', '*']) {
      expect(sh(`printf '%s\\0' ${shellQuote(s)}`).split('\0').slice(0, -1)).toEqual([s]);
    }
  });

  it('refuses an empty or blank template with a UsageError', () => {
    for (const tpl of ['', '   ', '\n\t']) {
      let err: unknown;
      try {
        checkTemplate(tpl);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).name).toBe('UsageError');
    }
    expect(() => checkTemplate('gzip -k {}')).not.toThrow();
  });
});

describe('stage inputs: {inputs.STAGE.FIELD}', () => {
  const hostile = "a'b $(touch pwned);`touch pwned2`.ts";
  const inputs = { transcode: { out: hostile, size: 12, meta: { fps: 25 } } };

  it('renders a needed stage\'s field shell-quoted, numbers and objects as JSON, nested paths too', () => {
    const cmd = renderTemplate('printf "%s|" {inputs.transcode.out} {inputs.transcode.size} {inputs.transcode.meta} {inputs.transcode.meta.fps} {stage}', task({ inputs }));
    expect(sh(cmd)).toBe(`${hostile}|12|{"fps":25}|25|main|`);
    expect(readdirSync(work)).toEqual([]); // nothing injected
  });

  it('a field the result lacks fails the attempt for good, naming it', () => {
    expect(() => renderTemplate('echo {inputs.transcode.missing}', task({ inputs }))).toThrow(/\{inputs\.transcode\.missing\}: the needed stage's result has no "missing"/);
    try {
      renderTemplate('echo {inputs.transcode.missing}', task({ inputs }));
    } catch (err) {
      expect((err as Error).name).toBe('PermanentError');
    }
  });

  it('only a result\'s own fields exist: constructor, __proto__, toString… are "has no field" errors', () => {
    const withList = { transcode: { out: 'x', list: ['a', 'b'] } };
    for (const field of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'out.length', 'list.map', 'list.constructor']) {
      const template = `echo {inputs.transcode.${field}}`;
      expect(() => renderTemplate(template, task({ inputs: withList })), field).toThrow(/the needed stage's result has no "/);
    }
    expect(() => renderTemplate('echo {inputs.constructor}', task({ inputs: withList }))).toThrow(/has no "constructor"/);
    // An array's own fields are its indexes and length.
    expect(run('{inputs.transcode.list.1} {inputs.transcode.list.length} {inputs.transcode.list}', task({ inputs: withList }))).toEqual(['b', '2', '["a","b"]']);
    // A result may really have a field of that name (JSON.parse makes it an own field).
    const own = { transcode: JSON.parse('{"constructor": "c", "__proto__": "p"}') as Record<string, unknown> };
    expect(run('{inputs.transcode.constructor} {inputs.transcode.__proto__}', task({ inputs: own }))).toEqual(['c', 'p']);
  });

  it('checkTemplate accepts inputs of the stages a stage needs and rejects the others', () => {
    expect(() => checkTemplate('cp {inputs.transcode.out} {}', ['transcode'])).not.toThrow();
    expect(() => checkTemplate('cp {inputs.package.out} {}', ['transcode'])).toThrow(/reads stage "package", which this stage does not need \(needs: transcode\)/);
    expect(() => checkTemplate('cp {inputs.package.out} {}')).toThrow(/only a stage with "needs" has inputs/);
  });
});

/** The NUL-separated arguments a printer wrote. */
const argsOf = (out: string) => out.split('\0').slice(0, -1);

const BASH = ['/bin/bash', '/usr/bin/bash'].find((p) => spawnSync(p, ['-c', 'true']).status === 0);

/** What a UsageError thrown by checkTemplate says, or null when it accepts the template. */
function refusal(template: string): string | null {
  try {
    checkTemplate(template);
    return null;
  } catch (err) {
    expect((err as Error).name).toBe('UsageError');
    return (err as Error).message;
  }
}

describe('renderExec: quoting follows where the placeholder stands (SPEC §4)', () => {
  // An external printer (not the builtin), so the command may run without a shell and be compared with sh.
  const P = "/usr/bin/printf '%s\\0'";
  /** A template per context, and the arguments the printer must receive for value v. */
  const contexts: [string, string, (v: string) => string[]][] = [
    ['bare', `${P} {}`, (v) => [v]],
    ["'…'", `${P} '{}'`, (v) => [v]],
    ['"…"', `${P} "{}"`, (v) => [v]],
    ['inside words of each kind', `${P} a{}b 'c{}d' "e{}f" "{}"'{}'{}`, (v) => [`a${v}b`, `c${v}d`, `e${v}f`, v + v + v]],
    ['$(…) inside "…"', `${P} "<$(printf '%s|' {} "{}")>"`, (v) => [`<${v}|${v}|>`]],
    ['"…" inside $(…) inside "…"', `${P} "$(printf '%s|' "x{}" '{}y')"`, (v) => [`x${v}|${v}y|`]],
    ["sh -c '… \"$1\"' _ {}", `sh -c '/usr/bin/printf "%s\\0" "$1"' _ {}`, (v) => [v]],
    ['$(…) inside $((…))', `${P} "$(( $(/usr/bin/printf %s {} | wc -c) + 0 ))"`, (v) => [String(Buffer.byteLength(v))]],
    ['"…" holding single quotes and a comment after', `${P} "it's {}" # {} runs nothing`, (v) => [`it's ${v}`]],
  ];
  const hostile = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 12 }).map((s) => s.replace(/\0/g, '')),
    fc
      .array(
        fc.constantFrom("'", '"', '$(touch PWNED)', '`touch PWNED`', '\\', '\\\\', '\n', '*', ';', '-', '--', ' ', '\t', 'é', 'e\u0301', '🚀', '日本', '$HOME', '${x}', '$', '!', '#', '{}', ')', '(', '|', '&', '>', '~', "'\\''", '"\'"', 'EOF'),
        { maxLength: 10 },
      )
      .map((parts) => parts.join('')),
  );

  for (const [where, template, expected] of contexts) {
    it(`${where}: /bin/sh passes any value exactly and runs nothing; the direct path gives the same argv`, () => {
      let direct = 0;
      fc.assert(
        fc.property(hostile, (value) => {
          const path = join(work, value);
          const t = task({ key: value, payload: { path, rel: value } });
          const tpl = template.replaceAll('{}', '{key}');
          const line = renderTemplate(tpl, t);
          expect(argsOf(sh(line))).toEqual(expected(value));
          // Where /bin/sh is bash (Fedora, macOS), the same line must mean the same.
          if (BASH) expect(argsOf(execFileSync(BASH, ['-c', line], { cwd: work, encoding: 'utf8' }))).toEqual(expected(value));
          const argv = directArgv(tpl, t);
          if (argv) {
            direct++;
            expect(argsOf(execFileSync(argv[0]!, argv.slice(1), { cwd: work, encoding: 'utf8' }))).toEqual(expected(value));
          }
          expect(readdirSync(work)).toEqual([]); // no PWNED, nothing at all
        }),
        { numRuns: 60 },
      );
      if (!/\$\(|#|sh -c/.test(template)) expect(direct).toBe(60); // plain quoting keeps the fast path
    });
  }

  it('"{}" keeps the direct-exec fast path: wc -c "{}" and cp "{}" "{dir}/{stem}.bak" need no shell', () => {
    const t = task({ payload: { path: "/d/it's \"here\" $(x).log", rel: 'x' } });
    expect(directArgv('wc -c "{}"', t)).toEqual(['wc', '-c', t.payload.path]);
    expect(directArgv('cp -- "{}" "{dir}/{stem}.bak"', t)).toEqual(['cp', '--', t.payload.path, "/d/it's \"here\" $(x).bak"]);
  });

  it('a comment is left as written, so a value with a newline cannot end it and run', () => {
    const t = task({ key: 'x\ntouch PWNED\n' });
    const line = renderTemplate('true {key} # was {key}', t);
    expect(line).toBe(`true ${shellQuote(t.key)} # was {key}`);
    sh(line);
    expect(readdirSync(work)).toEqual([]);
  });

  it('a backslash before a placeholder keeps it literal text', () => {
    expect(run('\\{} "\\{}"', task())).toEqual(['{}', '\\{}']);
  });

  it('a here-document before a placeholder: the body is copied, the placeholder after it is quoted', () => {
    const t = task({ key: "k'$(touch PWNED)" });
    const line = renderTemplate("cat <<'EOF'\n{ not a placeholder\nEOF\nprintf '%s\\0' {key}", t);
    expect(argsOf(sh(line))).toEqual(['{ not a placeholder\n', t.key].join('').split('\0'));
  });
});

describe('checkTemplate: where a value cannot be passed exactly, or quotes do not close (exit 2)', () => {
  const refused: [string, RegExp][] = [
    ['wc -c `ls {}`', /\{\} stands inside `…`.*write \$\(…\) instead of backquotes/],
    ['echo "`cat {name}`"', /\{name\} stands inside `…`/],
    ['echo ${x:-{}}', /\{\} stands inside \$\{…\}.*sh -c '… "\$1" …' _ \{\}/],
    ['echo "${x:-"{}"}"', /\{\} stands inside \$\{…\}/],
    ['echo ${}', /"\$\{\}": a \$ right before \{\} makes the shell read a variable/],
    ['echo "${key}"', /"\$\{key\}": a \$ right before \{key\}/],
    ['echo $(({#} + 1))', /\{#\} stands inside \$\(\(…\)\)/],
    [`sh -c 'cat {}'`, /\{\} stands inside the script of a shell's -c, which that shell would run with the value in it; .*sh -c '… "\$1" …' _ \{\}/],
    ['bash -lc "gzip {name}"', /\{name\} stands inside the script of a shell's -c/],
    ['sh -c {}', /\{\} stands inside the script of a shell's -c/],
    [`env A=1 /bin/dash -e -c 'x'"{}"`, /\{\} stands inside the script of a shell's -c/],
    ['sh -c -- "cat {}"', /\{\} stands inside the script of a shell's -c/],
    ['sh -e -o errexit -c "cat {}"', /\{\} stands inside the script of a shell's -c/],
    ['sudo -u bob "$SHELL" -c "cat {}"', /\{\} stands inside the script of a shell's -c/],
    ['script -qc "cat {}" /dev/null', /\{\} stands inside the script of a shell's -c/],
    ['runuser -u bob --command="cat {}"', /\{\} stands inside the script of a shell's -c/],
    // Audit 4, item 21: the shell named any way, not only by a listed name.
    ['`which sh` -c "cat {}"', /\{\} stands inside the script of a shell's -c/],
    ['$(command -v sh) -c "cat {}"', /\{\} stands inside the script of a shell's -c/],
    ['/bin/s[h] -c "cat {}"', /\{\} stands inside the script of a shell's -c/],
    ['/bin/s? -c "cat {}"', /\{\} stands inside the script of a shell's -c/],
    ['/bin/{sh,true} -c "cat {}"', /\{\} stands inside the script of a shell's -c/],
    ['rbash -c "cat {}"', /\{\} stands inside the script of a shell's -c/],
    ['/usr/bin/bash5.2 -c "cat {}"', /\{\} stands inside the script of a shell's -c/],
    ['busybox sh -c "cat {}"', /\{\} stands inside the script of a shell's -c/],
    ['s\\h -c "cat {}"', /\{\} stands inside the script of a shell's -c/],
    ['echo $(( $(sh -c "cat {}") % 5 ))', /\{\} stands inside the script of a shell's -c/],
    ['builtin eval "cat {}"', /\{\} stands in an argument of eval, trap, let, alias or watch/],
    ['trap -- "rm {}" EXIT; sleep 1', /\{\} stands in an argument of eval, trap/],
    ['let n={#}+1', /\{#\} stands in an argument of eval, trap, let/],
    ['watch -n 1 cat {}', /\{\} stands in an argument of eval, trap, let, alias or watch/],
    ['ssh -p 22 -o BatchMode=yes host "cat {}"', /\{\} stands in the command ssh hands to the remote shell/],
    ['(( {#} > 1 )) && echo big', /\{#\} stands inside \$\(\(…\)\) or \(\(…\)\)/],
    ['cat <<EOF\n{}\nEOF', /\{\} stands inside a here-document/],
    ['cat <<-{}\n\tx\n', /\{\} stands inside a here-document/],
  ];
  for (const [template, message] of refused) {
    it(`refuses ${JSON.stringify(template)}, naming the placeholder and the fix`, () => {
      expect(refusal(template)).toMatch(message);
    });
  }

  // Where dash and bash disagree on where a quote or expansion ends, no quoting is right for both.
  const ambiguous: [string, RegExp][] = [
    ["echo $'{}'", /\$'… is read differently by dash and bash, so \{\} could not be quoted/],
    ["printf $'a\\tb' {}", /\$'… is read differently by dash and bash/],
    ['echo $"{name}"', /\$"… is read differently/],
    [`echo "\${x:-'}'}" '{}'`, /a ' inside "\$\{…\}" is read differently by dash and bash, so \{\} could not/],
    ['echo $[1+1] {}', /\$\[…\] \(arithmetic in bash\) is read differently/],
  ];
  for (const [template, message] of ambiguous) {
    it(`refuses ${JSON.stringify(template)}: dash and bash would read it differently`, () => {
      expect(refusal(template)).toMatch(message);
      expect(refusal(template.replace(/\{[a-z#]*\}/g, 'x'))).toBeNull(); // fine without placeholders
    });
  }

  const unclosed: [string, RegExp][] = [
    ['wc -c "{}', /the quote " at character 7 is never closed/],
    ["wc -c '{}", /the quote ' at character 7 is never closed/],
    ['echo "it\'s {}', /the quote " at character 6 is never closed/],
    ['echo $(cat {}', /the \$\( at character 6 is never closed/],
    ['echo "$(cat {})', /the quote " at character 6 is never closed/],
    ['echo `ls', /the backquote ` at character 6 is never closed/],
    ['echo ${x', /the \$\{ at character 6 is never closed/],
    ['echo $((1', /the \$\(\( at character 6 is never closed/],
    ['echo "a\\"', /the quote " at character 6 is never closed/],
  ];
  for (const [template, message] of unclosed) {
    it(`refuses ${JSON.stringify(template)}: its quotes do not close`, () => {
      expect(refusal(template)).toMatch(message);
    });
  }

  it('accepts the ways people write templates', () => {
    for (const template of [
      'wc -c "{}"',
      "wc -c '{}'",
      'wc -c {}',
      `sh -c 'cat "$1"' _ {}`,
      `bash -c 'cat "$1" "$2"' {} {} "{name}"; grep -c '{}' log`,
      'gzip -k "{}" && mv "{}.gz" "{dir}/done/"',
      `awk '{print $2}' "{}" > "{.}.col2"`,
      'echo "$(basename "{}")" $HOME ${HOME} `date` $((1 + 2)) # {} is the path',
      'x=$(case {ext} in .gz) echo gz;; *) echo other;; esac); echo "$x {}"',
      "cat <<EOF > {}.txt\nhello $HOME\nEOF\nwc -c {}.txt",
      'cat <<< {}',
      'echo { foo } {{}} \\{}',
      // The value as an argument of the inner shell, or of options before the script: exact.
      `sh -c -- 'cat "$1"' _ {}`,
      `bash -O extglob -c 'cat "$1"' -- {}`,
      'bash script.sh -c {}',
      'sh {}',
      'ssh {} uptime',
      'ssh -i {} host true',
      'cat {} | sh -c "wc -l"',
      // A value that is an argument of a command inside $((…)): the command's output is evaluated, not the value.
      'echo $(( $(cat {}) % 5 ))',
      'echo $(( $(wc -c < {}) ))',
      'gzip -c {} > {}.gz',
      'ssh -c aes128-ctr host true',
    ]) {
      expect(refusal(template), template).toBeNull();
    }
  });

  it('renderTemplate refuses such a template too (a batch stored before): a permanent failure, nothing runs', () => {
    expect(() => renderTemplate('wc -c `ls {}`', task())).toThrow(/stands inside `…`/);
    try {
      renderTemplate('wc -c "{}', task());
    } catch (err) {
      expect((err as Error).name).toBe('PermanentError');
    }
  });
});
