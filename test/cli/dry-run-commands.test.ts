import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/cli.js';
import { mainIn, setProcessEnv } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';

// Issue 41 item 16: `run --dry-run` prints, after the plan, the command each task would run
// (the first 20, every one with --verbose), rendered by the worker's own code, one line per
// task, and writes nothing; `-k` is --keep-order.

/** The lines after the `commands…:` line of a dry run's output. */
function commandLines(stdout: string): string[] {
  const lines = stdout.trimEnd().split('\n');
  const at = lines.findIndex((l) => /^(commands|tasks \(key and payload, as JSON\))( \(the first 20; --verbose prints every one\))?:$/.test(l));
  expect(at, stdout).toBeGreaterThan(0);
  return lines.slice(at + 1);
}

/** What /bin/sh (or bash, for `$'…'`) prints running each line. */
const shellOutput = (lines: string[], shell = '/bin/sh') => lines.map((l) => execFileSync(shell, ['-c', l], { encoding: 'utf8' }));

const HOSTILE = ['plain', 'two words', "it's", '$(touch pwned)', 'back\\slash', '-n', '"dq"', 'semi;colon', 'a*b'];

describe('run --dry-run prints the commands', () => {
  it('renders each item as parallel --dry-run does: the same words for the shell, in source order, {#} counted alike', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.txt'), `${HOSTILE.join('\n')}\n`);
    const template = "printf '[%s]' {#} {}";
    const r = await mainIn(dir, ['run', '--items', 'list.txt', '--exec', template, '--dry-run']);
    expect(r.code, r.stderr).toBe(0);
    const ours = commandLines(r.stdout);
    expect(ours).toHaveLength(HOSTILE.length);
    // -k: without it parallel prints its dry-run lines as its job slots take them, which on a loaded
    // machine is not always the source order; ours is always in order (--dry-run is -k, below).
    const theirs = execFileSync('parallel', ['--will-cite', '--dry-run', '-k', template, '::::', 'list.txt'], { cwd: dir, encoding: 'utf8' }).trimEnd().split('\n');
    expect(shellOutput(ours)).toEqual(shellOutput(theirs));
    expect(shellOutput(ours)).toEqual(HOSTILE.map((h, i) => `[${i + 1}][${h}]`));
    expect(existsSync(join(dir, 'pwned'))).toBe(false);
    expect(existsSync(join(dir, '.splitdance'))).toBe(false); // nothing written, not even the store
  });

  it('a command of several lines, or holding control characters, is still one line: the argv in $\'…\'', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.txt'), 'a\tb\nesc\x1b[31mred\n');
    const template = "printf '<%s>' {}\nprintf '#%s' {attempt}";
    const r = await mainIn(dir, ['run', '--items', 'list.txt', '--exec', template, '--dry-run']);
    expect(r.code, r.stderr).toBe(0);
    const ours = commandLines(r.stdout);
    expect(ours).toHaveLength(2);
    expect(r.stdout).not.toContain('\x1b');
    for (const l of ours) expect(l).toMatch(/^\/bin\/sh -c \$'/);
    expect(shellOutput(ours, 'bash')).toEqual(['<a\tb>#1', '<esc\x1b[31mred>#1']);
  });

  it('shows the first 20 and says so; --verbose shows every one; --json carries them', async () => {
    const p = projectWithFiles(23);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'gzip -k {}', '--dry-run']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('commands (the first 20; --verbose prints every one):\n');
    const first = commandLines(r.stdout);
    expect(first).toEqual(p.keys.slice(0, 20).map((k) => `gzip -k '${join(p.src, k)}'`));
    const all = await mainIn(p.dir, ['run', 'src', '--exec', 'gzip -k {}', '--dry-run', '--verbose']);
    expect(commandLines(all.stdout)).toEqual(p.keys.map((k) => `gzip -k '${join(p.src, k)}'`));
    const json = JSON.parse((await mainIn(p.dir, ['run', 'src', '--exec', 'gzip -k {}', '--dry-run', '--json'])).stdout);
    expect(json.commands).toHaveLength(20);
    expect(json.commands[0]).toEqual({ key: 'f000.log', command: `gzip -k '${join(p.src, 'f000.log')}'`, reason: 'new: not in the batch yet' });
    expect(json.moreCommands).toBe(true);
  });

  it('of a batch that exists: leaves out finished tasks, numbers new ones as the run will, and leaves the store untouched', async () => {
    const p = projectWithFiles(3);
    const db = join(p.dir, 'store.db');
    const exec = 'echo {#} {key} >> seen.txt';
    expect((await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', exec])).code).toBe(0);
    writeFileSync(join(p.src, 'a-new.log'), 'x\n');
    const before = (await mainIn(p.dir, ['tasks', '--db', db, '--json'])).stdout;
    const dry = await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', exec, '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(commandLines(dry.stdout)).toEqual(["echo '4' 'a-new.log' >> seen.txt"]);
    // --json says why each task runs or is skipped.
    const why = JSON.parse((await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', exec, '--dry-run', '--json'])).stdout) as { commands: { key: string; reason: string }[]; skipped: { key: string; reason: string }[] };
    expect(why.commands.map((c) => [c.key, c.reason])).toEqual([['a-new.log', 'new: not in the batch yet']]);
    expect(why.skipped).toEqual(p.keys.map((key) => ({ key, reason: 'succeeded in this batch; `run --rerun-changed` runs it again once its input changes' })));
    expect((await mainIn(p.dir, ['tasks', '--db', db, '--json'])).stdout).toBe(before);
    expect((await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', exec])).code).toBe(0);
    expect(readFileSync(join(p.dir, 'seen.txt'), 'utf8')).toContain('4 a-new.log\n'); // what the dry run showed
    const done = await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', exec, '--dry-run']);
    expect(commandLines(done.stdout)).toEqual(['(none: every task is finished or up to date)']);
  });

  it('a module handler: each task as its key and payload', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.txt'), 'one\ntwo words\n');
    writeFileSync(join(dir, 'h.mjs'), 'export default async () => null;\n');
    const r = await mainIn(dir, ['run', '--items', 'list.txt', '--handler', 'h.mjs', '--dry-run']);
    expect(r.code, r.stderr).toBe(0);
    const lines = commandLines(r.stdout);
    expect(lines.map((l) => JSON.parse(l.slice(0, l.indexOf(' {'))))).toEqual(['one', 'two words']);
    expect(JSON.parse(lines[1]!.slice(lines[1]!.indexOf(' {') + 1))).toMatchObject({ item: 'two words' });
  });
});

describe('-k', () => {
  // --print sets the launcher in this process's environment (run/batch-pool.ts): put it back.
  let restore = () => {};
  afterEach(() => restore());

  it('is --keep-order, as in GNU parallel', async () => {
    const p = projectWithFiles(4);
    restore = setProcessEnv({ SPLITDANCE_SPAWNER: process.env.SPLITDANCE_SPAWNER });
    const exec = 'n=$(cut -c6- "$SPLITDANCE_PATH"); sleep 0.$((4 - n)); echo {key}';
    const r = await mainIn(p.dir, ['run', 'src', '--exec', exec, '--print', '-k', '-j', '4']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(p.keys.map((k) => `${k}\n`).join(''));
  });
});
