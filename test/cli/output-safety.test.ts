import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { tasksJson } from '../helpers/json-views.js';
import { projectWithFiles } from '../helpers/project.js';

/** Characters a terminal acts on: C0 (but newline and tab), DEL, C1, bidi controls. */
// eslint-disable-next-line no-control-regex
const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('empty filters', () => {
  it("cancel --key '', tasks --key '' and tasks --error '' are exit 2 and cancel nothing", async () => {
    const p = projectWithFiles(3);
    // Every task fails once and waits an hour to retry: all are PENDING and cancellable.
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'echo boom >&2; exit 1', '--backoff', '1h', '--no-wait'])).code).toBe(3);
    const before = (await tasksJson(p.dir)).map((t) => ({ key: t.key, status: t.status }));

    const cancel = await mainIn(p.dir, ['cancel', '--key', '']);
    expect(cancel.code).toBe(2);
    expect(cancel.stderr).toContain('--key is empty');
    for (const args of [['tasks', '--key', ''], ['tasks', '--error', ''], ['tasks', '--error', '  '], ['cancel', '--key', ' ']]) {
      const r = await mainIn(p.dir, args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
    }
    expect((await tasksJson(p.dir)).map((t) => ({ key: t.key, status: t.status }))).toEqual(before);
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
    const run = await mainIn(dir, ['run', 'src', '--batch', batch, '--exec', exec, '--retries', '0']);
    expect(run.code).toBe(1);
    const failureLine = run.stderr.split('\n').find((l) => l.startsWith('FAILED'))!;
    expect(failureLine).toContain('a\\x1b[31mred\\x9b2J\\u202egol.sh');
    expect(failureLine).toContain('bad\\x1b]0;owned\\x07');
    for (const l of run.stderr.split('\n').filter((x) => x.startsWith('FAILED') || x.includes('see the failures') || x.includes('finished'))) {
      expect(l).not.toMatch(RAW);
    }

    const show = await mainIn(dir, ['show', key]);
    expect(show.code).toBe(0);
    expect(show.stdout).not.toMatch(RAW);
    expect(show.stdout).toContain('a\\x1b[31mred\\x9b2J\\u202egol.sh');
    expect(show.stdout).toContain('| tail\\x1b[2J');
    expect(show.stdout).toContain('in batch b\\x1b[1m\\x85');

    for (const args of [['status'], ['tasks'], ['batches'], ['show', 'nope']]) {
      const r = await mainIn(dir, args);
      expect(r.stdout + r.stderr, args.join(' ')).not.toMatch(RAW);
    }
    const status = await mainIn(dir, ['status']);
    expect(status.stdout).toContain('e.g. a\\x1b[31mred');

    const json = JSON.parse((await mainIn(dir, ['show', key, '--json'])).stdout);
    expect(json.key).toBe(key);
    expect(json.attempts[0].outputTail).toContain('tail\x1b[2J');
    expect(JSON.parse((await mainIn(dir, ['tasks', '--json'])).stdout)[0].key).toBe(key);
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
    const first = await mainIn(p.dir, ['run', src, '--batch', batch, '--exec', 'exit 1', '--retries', '0']);
    expect(first.code).toBe(1);
    const again = await mainIn(p.dir, ['run', src, '--batch', batch, '--exec', 'true', '--history-warn', '1']);
    for (const r of [first, again]) {
      expect(r.stderr).not.toMatch(RAW);
      expect(r.stderr).toContain('\\x1b');
    }
    expect(again.stderr).toMatch(/attempts of history/); // a note, escaped too
  });
});

describe('the batch a command defaulted to', () => {
  it('tasks and logs name it on stderr, leaving stdout and --json as data', async () => {
    const p = projectWithFiles(1);
    expect((await mainIn(p.dir, ['run', 'src', '--batch', 'nightly', '--exec', 'echo hello'])).code).toBe(0);
    const tasks = await mainIn(p.dir, ['tasks']);
    expect(tasks.stderr).toContain('batch nightly (the most recent');
    expect(tasks.stdout).not.toContain('nightly');
    const logs = await mainIn(p.dir, ['logs', 'f000.log']);
    expect(logs.stdout).toBe('hello\n');
    expect(logs.stderr).toContain('batch nightly (the most recent');
    const json = await mainIn(p.dir, ['tasks', '--json']);
    expect(JSON.parse(json.stdout)).toHaveLength(1);
    expect(json.stderr).toBe('');
    expect((await mainIn(p.dir, ['tasks', '--batch', 'nightly'])).stderr).toBe('');
  });
});

describe('report --html', () => {
  it('into a folder that does not exist is exit 2 naming the folder', async () => {
    const p = projectWithFiles(1);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true'])).code).toBe(0);
    const r = await mainIn(p.dir, ['report', '--html', 'nodir/x.html']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`the folder ${join(p.dir, 'nodir')} does not exist`);
    expect(r.stderr).not.toContain('unexpected');
    expect(existsSync(join(p.dir, 'nodir'))).toBe(false);
  });

  it('without --html, each batch gets its own file in the working directory, whatever its name', async () => {
    const p = projectWithFiles(1);
    for (const batch of ['a/b', 'a_b', '..', '../../escape']) {
      expect((await mainIn(p.dir, ['run', 'src', '--batch', batch, '--exec', 'true'])).code).toBe(0);
      expect((await mainIn(p.dir, ['report', '--batch', batch])).code).toBe(0);
    }
    const reports = readdirSync(p.dir).filter((f) => f.startsWith('splitdance-report-'));
    expect(reports).toHaveLength(4);
    expect(readdirSync(join(p.dir, '..')).filter((f) => f.startsWith('splitdance-report-'))).toEqual([]);
  });
});
