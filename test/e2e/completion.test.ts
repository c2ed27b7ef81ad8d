import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BIN, tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { missing } from '../helpers/services.js';

/**
 * `splitdance completion bash|zsh|fish` scripts load in their shells and complete commands,
 * options, `--status` values and the store's batch names, a hostile name included, which is
 * offered as text and never run. The shells call the installed binary; the stores they read are
 * made in-process. (`completion` itself, called in-process, and the man page: test/cli/completion.test.ts.)
 */
const HOSTILE = '$(touch pwned)';
let dir = '';
let env: NodeJS.ProcessEnv = {};

beforeAll(async () => {
  dir = tempDir();
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src/a.txt'), 'a\n');
  for (const batch of ['nightly-1', HOSTILE, 'night two']) {
    expect((await mainIn(dir, ['run', 'src', '--exec', 'true', '--batch', batch])).code).toBe(0);
  }
  expect((await mainIn(dir, ['run', 'src', '--exec', 'true', '--batch', 'elsewhere', '--db', 'other.db'])).code).toBe(0);
  // The scripts call `splitdance` from PATH, as an installed package provides it.
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'splitdance'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
  chmodSync(join(bin, 'splitdance'), 0o755);
  env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
}, 60_000);

const sh = (shell: string, script: string) => spawnSync(shell, ['-c', script], { cwd: dir, env, encoding: 'utf8' });
const nothingRan = () => expect(readdirSync(dir)).not.toContain('pwned');

describe('bash completion', () => {
  /** The words bash would offer after `line` (the last word being completed). */
  function complete(line: string[]): string[] {
    const words = line.map((w) => `'${w.replace(/'/g, `'\\''`)}'`).join(' ');
    const r = sh('bash', `source <(splitdance completion bash) || exit 9; COMP_WORDS=(${words}); COMP_CWORD=${line.length - 1}; _splitdance; printf '%s\\n' "\${COMPREPLY[@]}"`);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    return r.stdout.split('\n').filter(Boolean);
  }

  it('completes commands, options and --status values', () => {
    expect(complete(['splitdance', 'st'])).toEqual(['status']);
    expect(complete(['splitdance', 'run', '--ret'])).toEqual(['--retries', '--retry-quiet']);
    expect(complete(['splitdance', 'worker', '--fol'])).toEqual(['--follow']);
    expect(complete(['splitdance', 'tasks', '--status', 'F'])).toEqual(['FAILED']);
    expect(complete(['splitdance', 'completion', 'f'])).toEqual(['fish']);
  });

  it("offers the store's batch names quoted, runs none of them, and reads the --db on the line", () => {
    expect(complete(['splitdance', 'status', '--batch', '']).sort()).toEqual(['\\$\\(touch\\ pwned\\)', 'night\\ two', 'nightly-1']);
    expect(complete(['splitdance', 'show', '--batch', 'nightly'])).toEqual(['nightly-1']);
    expect(complete(['splitdance', 'status', '--db', 'other.db', '--batch', ''])).toEqual(['elsewhere']);
    nothingRan();
  });
});

describe.skipIf(missing('zsh', 'the zsh completion test'))('zsh completion', () => {
  it('loads under compinit and registers _splitdance for splitdance', () => {
    const r = sh('zsh', "autoload -Uz compinit && compinit -u -D; source <(splitdance completion zsh) || exit 9; print -r -- ${_comps[splitdance]}; whence -w _splitdance_batches");
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('_splitdance\n_splitdance_batches: function\n');
  });
});

describe.skipIf(missing('zsh', 'the zsh completion test'))('zsh completion at a terminal', () => {
  // Audit 4, item 4: zsh inserted batch names unquoted (`compadd -Q`), so completing a batch
  // named `n2;touch PWNED;` and pressing Enter ran `touch PWNED`.
  it('inserts a hostile batch name quoted: Enter runs splitdance with that name, and nothing else', async () => {
    const here = tempDir();
    mkdirSync(join(here, 'src'));
    writeFileSync(join(here, 'src/a.txt'), 'a\n');
    expect((await mainIn(here, ['run', 'src', '--exec', 'true', '--batch', 'n2;touch PWNED;'])).code).toBe(0);
    const shell = spawn('script', ['-qec', 'zsh -f -i', '/dev/null'], { cwd: here, env: { ...env, TERM: 'xterm' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let screen = '';
    shell.stdout.on('data', (b) => (screen += b));
    const until = async (what: RegExp) => {
      for (const end = Date.now() + 20_000; !what.test(screen); await new Promise((r) => setTimeout(r, 50))) {
        if (Date.now() > end) throw new Error(`zsh never showed ${what}: ${JSON.stringify(screen.slice(-500))}`);
      }
    };
    shell.stdin.write('autoload -Uz compinit; compinit -u -D; source <(splitdance completion zsh); echo LOADED\n');
    await until(/LOADED\r?\n/);
    shell.stdin.write('splitdance status --batch n2\t');
    await until(/n2\\;touch\\ PWNED\\;/);
    shell.stdin.write('\n');
    await until(/batch \S*n2;touch PWNED;/);
    shell.stdin.end('exit\n');
    await new Promise((r) => shell.on('close', r));
    expect(readdirSync(here)).not.toContain('PWNED');
  }, 60_000);
});

describe.skipIf(missing('fish', 'the fish completion test'))('fish completion', () => {
  /** What fish offers for `line` (each `word<TAB>description`), only the words. */
  const complete = (line: string) => {
    const r = sh('fish', `splitdance completion fish | source; or exit 9; complete -C ${JSON.stringify(line)}`);
    expect(r.status, r.stderr).toBe(0);
    return r.stdout.split('\n').filter(Boolean).map((l) => l.split('\t')[0]);
  };

  it("completes commands, options and the store's batch names, running none of them", () => {
    expect(complete('splitdance st')).toEqual(['status']);
    expect(complete('splitdance run --ret')).toEqual(['--retries', '--retry-quiet']);
    expect(complete('splitdance status --batch ')).toEqual([HOSTILE, 'night two', 'nightly-1']);
    expect(complete('splitdance status --db other.db --batch ')).toEqual(['elsewhere']);
    nothingRan();
  });
});

/**
 * A folder named like a batch, and a task key that is a shell command: what a person typing
 * TAB at a terminal gets. Issue 41: `complete -o filenames` made bash insert `--batch gz3/`
 * when a folder `gz3` existed; `--items` and task keys did not complete.
 */
describe('batch names are words, --items a file, show/logs a task key', () => {
  let here = '';
  beforeAll(async () => {
    here = tempDir();
    mkdirSync(join(here, 'src'));
    mkdirSync(join(here, 'gz3'));
    writeFileSync(join(here, 'src/a.txt'), 'a\n');
    writeFileSync(join(here, 'src/$(touch PWNED).txt'), 'b\n');
    writeFileSync(join(here, 'list.txt'), 'x\n');
    expect((await mainIn(here, ['run', 'src', '--exec', 'true', '--batch', 'gz3'])).code).toBe(0);
    expect((await mainIn(here, ['run', '--items', 'list.txt', '--exec', 'true', '--batch', 'later'])).code).toBe(0);
  }, 60_000);

  /** Types each line (ending in TAB, then Enter) into an interactive `shell` and returns the screen. */
  async function typeAtTerminal(shell: string, setup: string, lines: string[]): Promise<string> {
    const child = spawn('script', ['-qec', shell, '/dev/null'], { cwd: here, env: { ...env, TERM: 'xterm', PS1: '$ ' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let screen = '';
    child.stdout.on('data', (b) => (screen += b));
    const until = async (what: RegExp) => {
      for (const end = Date.now() + 20_000; !what.test(screen); await new Promise((r) => setTimeout(r, 50))) {
        if (Date.now() > end) throw new Error(`${shell} never showed ${what}: ${JSON.stringify(screen.slice(-800))}`);
      }
    };
    child.stdin.write(`${setup}; echo LOADED\n`);
    await until(/LOADED\r?\n/);
    for (const [i, line] of lines.entries()) {
      child.stdin.write(line);
      // What the completion inserted is on the screen once the shell has redrawn the line; then Enter.
      await new Promise((r) => setTimeout(r, 1500));
      child.stdin.write(`\necho DONE${i}\n`);
      await until(new RegExp(`[\\r\\n]DONE${i}\\r?\\n`));
    }
    child.stdin.end('exit\n');
    await new Promise((r) => child.on('close', r));
    return screen;
  }

  it('bash at a terminal: `--batch gz<TAB>` is `gz3 ` beside a folder gz3, and a hostile key is inserted quoted', async () => {
    const screen = await typeAtTerminal('bash --norc --noprofile -i', 'source <(splitdance completion bash)', [
      'splitdance status --batch gz\t',
      'splitdance show --batch gz3 \\$\t',
    ]);
    expect(screen).not.toContain('gz3/');
    expect(screen).toMatch(/batch \S*gz3\S* \(/);
    expect(screen).toContain('splitdance show --batch gz3 \\$\\(touch\\ PWNED\\).txt');
    expect(screen).toMatch(/\$\(touch PWNED\)\.txt\S* in batch gz3: SUCCESS/);
    expect(readdirSync(here)).not.toContain('PWNED');
  }, 60_000);

  it('bash: --items completes files, show and logs the keys of the batch on the line (the latest without one)', () => {
    const complete = (line: string[]) => {
      const words = line.map((w) => `'${w.replace(/'/g, `'\\''`)}'`).join(' ');
      const r = spawnSync('bash', ['-c', `source <(splitdance completion bash) || exit 9; COMP_WORDS=(${words}); COMP_CWORD=${line.length - 1}; _splitdance; printf '%s\\n' "\${COMPREPLY[@]}"`], { cwd: here, env, encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      return r.stdout.split('\n').filter(Boolean).sort();
    };
    expect(complete(['splitdance', 'run', '--items', 'li'])).toEqual(['list.txt']);
    expect(complete(['splitdance', 'show', ''])).toEqual(['x']);
    expect(complete(['splitdance', 'logs', '--batch', 'gz3', ''])).toEqual(['\\$\\(touch\\ PWNED\\).txt', 'a.txt']);
    expect(complete(['splitdance', 'show', '--batch', "'gz3'", 'a'])).toEqual(['a.txt']);
    expect(complete(['splitdance', 'show', '--batch', 'no-such-batch', ''])).toEqual([]);
    expect(readdirSync(here)).not.toContain('PWNED');
  });

  it.skipIf(missing('zsh', 'the zsh completion test'))('zsh at a terminal: the keys of the --batch on the line, inserted quoted', async () => {
    const screen = await typeAtTerminal('zsh -f -i', 'autoload -Uz compinit; compinit -u -D; source <(splitdance completion zsh)', [
      'splitdance show --batch gz3 a\t',
      'splitdance logs --batch gz3 \\$\t',
    ]);
    expect(screen).toContain('splitdance show --batch gz3 a.txt');
    expect(screen).toContain('splitdance logs --batch gz3 \\$\\(touch\\ PWNED\\).txt');
    expect(readdirSync(here)).not.toContain('PWNED');
  }, 60_000);

  it.skipIf(missing('fish', 'the fish completion test'))('fish: --items completes files, show the keys of the batch on the line', () => {
    const complete = (line: string) => {
      const r = spawnSync('fish', ['-c', `splitdance completion fish | source; or exit 9; complete -C ${JSON.stringify(line)}`], { cwd: here, env, encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      return r.stdout.split('\n').filter(Boolean).map((l) => l.split('\t')[0]).sort();
    };
    expect(complete('splitdance run --items li')).toEqual(['list.txt']);
    expect(complete('splitdance show --batch gz3 ')).toEqual(['$(touch PWNED).txt', 'a.txt']);
    expect(readdirSync(here)).not.toContain('PWNED');
  });
});
