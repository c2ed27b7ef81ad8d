import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCli, tempDir } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query } from '../helpers/store.js';

/** Characters a terminal acts on: C0 (but newline and tab), DEL, C1, bidi controls. */
// eslint-disable-next-line no-control-regex
const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/**
 * Runs a command splitdance suggested, exactly as a user pasting it would: through /bin/sh.
 * `status` exits 1 on a batch with failures (its verdict): that is its answer, not an error.
 */
function runSuggested(command: string, cwd: string): string {
  expect(command.startsWith('splitdance ')).toBe(true);
  const script = `splitdance() { "${process.execPath}" "${BIN}" "$@"; }\n${command}`;
  const r = spawnSync('/bin/sh', ['-c', script], { cwd, env: { ...process.env, NO_COLOR: '1' }, encoding: 'utf8' });
  expect(r.status === 0 || (r.status === 1 && command.startsWith('splitdance status')), `${command}: ${r.stderr}`).toBe(true);
  return r.stdout;
}

describe('empty filters', () => {
  it("cancel --key '', tasks --key '' and tasks --error '' are exit 2 and cancel nothing", async () => {
    const p = projectWithFiles(3);
    // Every task fails once and waits an hour to retry: all are PENDING and cancellable.
    expect((await runCli(['run', 'src', '--exec', 'echo boom >&2; exit 1', '--backoff', '1h', '--no-wait'], { cwd: p.dir })).code).toBe(3);
    const before = query(dbPathIn(p.dir), 'SELECT task_key, status FROM tasks ORDER BY task_key');

    const cancel = await runCli(['cancel', '--key', ''], { cwd: p.dir });
    expect(cancel.code).toBe(2);
    expect(cancel.stderr).toContain('--key is empty');
    for (const args of [['tasks', '--key', ''], ['tasks', '--error', ''], ['tasks', '--error', '  '], ['cancel', '--key', ' ']]) {
      const r = await runCli(args, { cwd: p.dir });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
    }
    expect(query(dbPathIn(p.dir), 'SELECT task_key, status FROM tasks ORDER BY task_key')).toEqual(before);
    expect(before.every((t) => (t as { status: string }).status === 'PENDING')).toBe(true);
  });
});

describe('control characters in human output', () => {
  it('keys, errors and output tails are escaped in run failure lines, show, status, tasks and batches; JSON stays exact', async () => {
    const dir = tempDir();
    const key = 'a\x1b[31mred\u009b2J\u202egol.sh';
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', key), 'x\n');
    const exec = `printf 'tail\\033[2J\\nbad\\033]0;owned\\007\\r\\n' >&2; exit 1`;
    const batch = 'b\x1b[1m\u0085';
    const run = await runCli(['run', 'src', '--batch', batch, '--exec', exec, '--retries', '0'], { cwd: dir });
    expect(run.code).toBe(1);
    const failureLine = run.stderr.split('\n').find((l) => l.startsWith('FAILED'))!;
    expect(failureLine).toContain('a\\x1b[31mred\\x9b2J\\u202egol.sh');
    expect(failureLine).toContain('bad\\x1b]0;owned\\x07');
    for (const l of run.stderr.split('\n').filter((x) => x.startsWith('FAILED') || x.includes('see the failures') || x.includes('finished'))) {
      expect(l).not.toMatch(RAW);
    }

    const show = await runCli(['show', key], { cwd: dir });
    expect(show.code).toBe(0);
    expect(show.stdout).not.toMatch(RAW);
    expect(show.stdout).toContain('a\\x1b[31mred\\x9b2J\\u202egol.sh');
    expect(show.stdout).toContain('| tail\\x1b[2J');
    expect(show.stdout).toContain('in batch b\\x1b[1m\\x85');

    for (const args of [['status'], ['tasks'], ['batches'], ['show', 'nope']]) {
      const r = await runCli(args, { cwd: dir });
      expect(r.stdout + r.stderr, args.join(' ')).not.toMatch(RAW);
    }
    const status = await runCli(['status'], { cwd: dir });
    expect(status.stdout).toContain('e.g. a\\x1b[31mred');

    const json = JSON.parse((await runCli(['show', key, '--json'], { cwd: dir })).stdout);
    expect(json.key).toBe(key);
    expect(json.attempts[0].outputTail).toContain('tail\x1b[2J');
    expect(JSON.parse((await runCli(['tasks', '--json'], { cwd: dir })).stdout)[0].key).toBe(key);
  });
});

describe('control characters in the run\'s own lines', () => {
  it('a batch name and a source path with ESC and a bidi override are escaped in the start line, notes and summary', async () => {
    const p = projectWithFiles(0);
    const src = join(p.dir, 'in\x1b[2Jdir\u202e');
    mkdirSync(src);
    writeFileSync(join(src, 'a.log'), 'x');
    writeFileSync(join(src, 'b.log'), 'x');
    const batch = 'b\x1b]0;title\x07\u202egol';
    const first = await runCli(['run', src, '--batch', batch, '--exec', 'exit 1', '--retries', '0'], { cwd: p.dir });
    expect(first.code).toBe(1);
    const again = await runCli(['run', src, '--batch', batch, '--exec', 'true', '--history-warn', '1'], { cwd: p.dir });
    for (const r of [first, again]) {
      expect(r.stderr).not.toMatch(RAW);
      expect(r.stderr).toContain('\\x1b');
    }
    expect(again.stderr).toMatch(/attempts of history/); // a note, escaped too
  });
});

describe('suggested commands', () => {
  it('the "see the failures" command runs through /bin/sh on the --db and batch given, and runs nothing injected', async () => {
    const p = projectWithFiles(1);
    writeFileSync(join(p.src, '-rf'), 'x\n');
    writeFileSync(join(p.src, 'e\x1bk'), 'x\n');
    const db = join(p.dir, 'elsewhere', 'store.db');
    const batch = "x'; touch P; echo '";
    const run = await runCli(['run', 'src', '--db', db, '--batch', batch, '--exec', 'echo out of {key}; exit 1', '--retries', '0'], { cwd: p.dir });
    expect(run.code).toBe(1);
    const hint = run.stderr.split('\n').find((l) => l.startsWith('see the failures: '))!;
    const [see, retry] = hint.slice('see the failures: '.length).split('; retry them: ');
    expect(see).toContain('--db ');
    expect(retry).toContain('--batch ');

    // Run from another folder with no store of its own: only the --db in the hint can find the batch.
    const other = tempDir();
    const status = runSuggested(see!, other);
    expect(status).toContain(`batch ${batch} (${p.src})`);
    expect(status).toContain('3 failed');
    expect(existsSync(join(other, 'P'))).toBe(false);
    expect(existsSync(join(p.dir, 'P'))).toBe(false);
    expect(existsSync(join(other, '.splitdance'))).toBe(false);

    // `show` suggests `logs` for each attempt: a key starting with `-` and one with ESC work too.
    for (const key of ['-rf', 'e\x1bk']) {
      const show = runSuggested(`splitdance show --db '${db}' --batch '${batch.replace(/'/g, `'\\''`)}' -- '${key}'`, other);
      const logs = show.split('\n').find((l) => l.includes('full output: '))!.split('full output: ')[1]!;
      expect(logs).not.toMatch(RAW);
      expect(runSuggested(logs, other)).toBe(`out of ${key}\n`);
    }
    expect(existsSync(join(other, 'P'))).toBe(false);

    const statusHint = runSuggested(see!, other).split('\n').find((l) => l.startsWith('finished with failures: '))!;
    expect(statusHint).toContain(`--db ${db}`);
  });
});

describe('the batch a command defaulted to', () => {
  it('tasks and logs name it on stderr, leaving stdout and --json as data', async () => {
    const p = projectWithFiles(1);
    expect((await runCli(['run', 'src', '--batch', 'nightly', '--exec', 'echo hello'], { cwd: p.dir })).code).toBe(0);
    const tasks = await runCli(['tasks'], { cwd: p.dir });
    expect(tasks.stderr).toContain('batch nightly (the most recent');
    expect(tasks.stdout).not.toContain('nightly');
    const logs = await runCli(['logs', 'f000.log'], { cwd: p.dir });
    expect(logs.stdout).toBe('hello\n');
    expect(logs.stderr).toContain('batch nightly (the most recent');
    const json = await runCli(['tasks', '--json'], { cwd: p.dir });
    expect(JSON.parse(json.stdout)).toHaveLength(1);
    expect(json.stderr).toBe('');
    expect((await runCli(['tasks', '--batch', 'nightly'], { cwd: p.dir })).stderr).toBe('');
  });
});

describe('report --html', () => {
  it('into a folder that does not exist is exit 2 naming the folder', async () => {
    const p = projectWithFiles(1);
    expect((await runCli(['run', 'src', '--exec', 'true'], { cwd: p.dir })).code).toBe(0);
    const r = await runCli(['report', '--html', 'nodir/x.html'], { cwd: p.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`the folder ${join(p.dir, 'nodir')} does not exist`);
    expect(r.stderr).not.toContain('unexpected');
    expect(existsSync(join(p.dir, 'nodir'))).toBe(false);
  });

  it('without --html, each batch gets its own file in the working directory, whatever its name', async () => {
    const p = projectWithFiles(1);
    for (const batch of ['a/b', 'a_b', '..', '../../escape']) {
      expect((await runCli(['run', 'src', '--batch', batch, '--exec', 'true'], { cwd: p.dir })).code).toBe(0);
      expect((await runCli(['report', '--batch', batch], { cwd: p.dir })).code).toBe(0);
    }
    const reports = readdirSync(p.dir).filter((f) => f.startsWith('splitdance-report-'));
    expect(reports).toHaveLength(4);
    expect(readdirSync(join(p.dir, '..')).filter((f) => f.startsWith('splitdance-report-'))).toEqual([]);
  });
});
