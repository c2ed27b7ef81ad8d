import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mainIn, startIn } from '../helpers/in-process-cli.js';
import { waitUntil } from '../helpers/json-views.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { attemptsIn, tasksIn } from '../helpers/read-store.js';
import { missing } from '../helpers/services.js';

// `-n N` / `-N N` / `-X` / `-m` (SPEC §10): one `--exec` command for many items, each item still
// its own task with its own attempts and outcome. A command that fails for its group is split
// (halves, then single items) on its worker until the items that fail on their own are found.

const newSchema = pgSchemas('sd_groups');

/**
 * A project whose `check.sh` logs each call's arguments (one line, NUL-free items) and fails,
 * saying so on stderr, when one of them is in $BAD (a file of bad items, one per line).
 */
function project(): { dir: string; db: string; calls: () => string[][]; bad: (items: string[]) => void } {
  const dir = mkdtempSync(join(tmpdir(), 'sd-groups-'));
  const script = join(dir, 'check.sh');
  writeFileSync(
    script,
    [
      '#!/bin/sh',
      'printf "%s\\n" "$*" >> "$(dirname "$0")/calls.log"',
      'for a in "$@"; do',
      '  if grep -qxF -- "$a" "$(dirname "$0")/bad.txt" 2>/dev/null; then echo "bad item: $a" >&2; exit 1; fi',
      'done',
      'echo "ok $*"',
      '',
    ].join('\n'),
  );
  chmodSync(script, 0o755);
  const calls = () => (existsSync(join(dir, 'calls.log')) ? readFileSync(join(dir, 'calls.log'), 'utf8').trim().split('\n').map((l) => l.split(' ')) : []);
  const bad = (items: string[]) => writeFileSync(join(dir, 'bad.txt'), items.map((i) => `${i}\n`).join(''));
  return { dir, db: join(dir, '.splitdance', 'splitdance.db'), calls, bad };
}

const numbers = (n: number) => Array.from({ length: n }, (_, i) => String(i + 1));

describe('many items per --exec command', () => {
  it('a group with one bad item ends that item FAILED and every other SUCCESS, each with its own attempts', async () => {
    const p = project();
    p.bad(['13']);
    const r = await mainIn(p.dir, ['run', '-n', '8', '-j', '2', '--retries', '1', '--backoff', '10ms', '--exec', './check.sh {}', ':::', ...numbers(40)]);
    expect(r.code, r.stderr).toBe(1);
    const tasks = await tasksIn(p.db);
    expect(tasks.filter((t) => t.status === 'SUCCESS')).toHaveLength(39);
    const thirteen = tasks.find((t) => t.key === '13')!;
    expect(thirteen).toMatchObject({ status: 'FAILED', attempts: 2 });
    expect(thirteen.lastError).toMatch(/^exit code 1: bad item: 13$/);
    const attempts = await attemptsIn(p.db);
    for (const t of tasks) expect(attempts.filter((a) => a.key === t.key).map((a) => a.outcome), t.key).toEqual(t.key === '13' ? ['FAILED', 'FAILED'] : ['SUCCESS']);
    const calls = p.calls();
    // Groups of 8 as GNU parallel makes them; 13 ran alone once per attempt; every other item ran in exactly one command that succeeded.
    expect(calls[0]).toHaveLength(8);
    expect(calls.filter((c) => c.length === 1 && c[0] === '13')).toHaveLength(2);
    expect(calls.filter((c) => !c.includes('13')).flat().sort()).toEqual(numbers(40).filter((n) => n !== '13').sort());
    // The split took at most log2(8) halvings: 8 → 4 → 2 → 1, each with its sibling.
    expect(calls.filter((c) => c.includes('13')).map((c) => c.length).sort()).toEqual([1, 1, 2, 4, 8]);
    // `show` says an item ran in a group, and its output there is the group's command's.
    const show = await mainIn(p.dir, ['show', '1']);
    expect(show.stdout).toMatch(/in a group: one command ran it with other items; its log is \d+-1\.log/);
    expect(show.stdout).toContain('| ok 1 2 3 4 5 6 7 8');
    expect((await mainIn(p.dir, ['show', '13'])).stdout).not.toContain('in a group');
  });

  it('hostile items inside a group stay exact arguments, with and without a shell, and run nothing', async () => {
    const p = project();
    const hostile = ["a'b", '$(touch pwned)', '`touch pwned2`', 'x y', ';ls', '-n', '*', '"q"', 'back\\slash', '--', 'tab\there'];
    const dump = join(p.dir, 'dump.sh');
    writeFileSync(dump, '#!/bin/sh\nout="$(dirname "$0")/$1"; shift\nfor a in "$@"; do printf "%s\\0" "$a"; done >> "$out"\n');
    chmodSync(dump, 0o755);
    for (const [mode, template, out] of [
      ['-n', './dump.sh simple-n {}', 'simple-n'],
      ['-X', './dump.sh simple-X pre{}post', 'simple-X'],
      ['-m', './dump.sh shell-m {} | cat', 'shell-m'],
    ] as const) {
      const args = mode === '-n' ? ['-n', '4'] : [mode];
      const r = await mainIn(p.dir, ['run', ...args, '-j', '1', '--batch', out, '--exec', template, ':::', ...hostile]);
      expect(r.code, `${mode}: ${r.stderr}`).toBe(0);
      const got = readFileSync(join(p.dir, out), 'utf8').split('\0').slice(0, -1);
      const want = mode === '-X' ? hostile.map((h) => `pre${h}post`) : hostile;
      expect(got.sort(), mode).toEqual([...want].sort());
    }
    expect(existsSync(join(p.dir, 'pwned'))).toBe(false);
    expect(existsSync(join(p.dir, 'pwned2'))).toBe(false);
  });

  it.skipIf(missing('parallel', 'the side-by-side tests with GNU parallel'))("prints what GNU parallel prints for -n and -N on the same items, in order with -k", async () => {
    const p = project();
    const items = ['a.txt', 'b c', 'd/e.log', "f'g", 'h', 'i.tar.gz', 'j', 'k'];
    for (const [words, template] of [
      [['-n', '3'], 'echo {} {.}'],
      [['-N', '2'], 'echo {2} {1/}'],
      [['-n', '2'], 'printf "%s|" {}; echo'],
      [['-n', '3', '--tag'], 'echo {/}'],
    ] as const) {
      const ours = await mainIn(p.dir, ['run', ...words, '-j', '2', '--print', '-k', '--batch', `b${words.join('')}${template.length}`, '--exec', template, ':::', ...items]);
      expect(ours.code, ours.stderr).toBe(0);
      const theirs = execFileSync('parallel', ['-k', '-j', '2', ...words, template, ':::', ...items], { encoding: 'utf8' });
      expect(ours.stdout, `${words.join(' ')} ${template}`).toBe(theirs);
    }
  });

  it('-N: {1} and {2} name places in the group, so a failed pair is not split; each of its items ends with the pair\'s answer', async () => {
    const p = project();
    const files = { a: 'same\n', b: 'same\n', c: 'x\n', d: 'y\n' };
    for (const [name, text] of Object.entries(files)) writeFileSync(join(p.dir, name), text);
    const r = await mainIn(p.dir, ['run', '-N', '2', '--retries', '0', '--exec', 'cmp {1} {2}', ':::', 'a', 'b', 'c', 'd']);
    expect(r.code, r.stderr).toBe(1);
    const tasks = await tasksIn(p.db);
    expect(tasks.filter((t) => t.status === 'SUCCESS').map((t) => t.key)).toEqual(['a', 'b']);
    for (const t of tasks.filter((t) => t.status === 'FAILED')) expect(t.lastError, t.key).toMatch(/^exit code 1 with nothing on stderr/); // cmp's answer, on stdout: c d differ
    expect(r.stderr).not.toMatch(/No such file/);
  });

  it('retry-failed runs the failed item again, in a group of what is left, and keeps the others as they were', async () => {
    const p = project();
    p.bad(['5']);
    expect((await mainIn(p.dir, ['run', '-n', '4', '--retries', '0', '--batch', 'b', '--exec', './check.sh {}', ':::', ...numbers(12)])).code).toBe(1);
    p.bad([]);
    const r = await mainIn(p.dir, ['retry-failed', '--run', '--batch', 'b']);
    expect(r.code, r.stderr).toBe(0);
    const tasks = await tasksIn(p.db, 'b');
    expect(tasks.every((t) => t.status === 'SUCCESS')).toBe(true);
    expect(p.calls().at(-1)).toEqual(['5']);
    const attempts = await attemptsIn(p.db, 'b');
    expect(attempts.filter((a) => a.key === '5').map((a) => a.outcome)).toEqual(['FAILED', 'SUCCESS']);
    expect(attempts.filter((a) => a.key !== '5').every((a) => a.outcome === 'SUCCESS')).toBe(true);
  });

  it('--dry-run prints the commands of the first groups, each value quoted, and writes nothing', async () => {
    const p = project();
    const r = await mainIn(p.dir, ['run', '-n', '4', '--dry-run', '--exec', './check.sh {} {.}', ':::', ...numbers(9).map((n) => `${n}.x`), "it's"]);
    expect(r.code, r.stderr).toBe(0);
    const commands = r.stdout.split('commands:\n')[1]!.trim().split('\n');
    expect(commands).toEqual([
      "'./check.sh' '1.x' '2.x' '3.x' '4.x' '1' '2' '3' '4'",
      "'./check.sh' '5.x' '6.x' '7.x' '8.x' '5' '6' '7' '8'",
      `'./check.sh' '9.x' 'it'\\''s' '9' 'it'\\''s'`,
    ]);
    expect(existsSync(p.db)).toBe(false);
  });

  it("logs shows a running group's output for its first item, and says where the others' goes", async () => {
    const p = project();
    const slow = join(p.dir, 'slow.sh');
    writeFileSync(slow, '#!/bin/sh\necho "hello $*"\ntouch "$(dirname "$0")/started"\nsleep 2\n');
    chmodSync(slow, 0o755);
    const run = startIn(p.dir, ['run', '-n', '4', '-j', '1', '--exec', './slow.sh {}', ':::', 'a', 'b', 'c', 'd']);
    await waitUntil(async () => existsSync(join(p.dir, 'started')), 30_000, 'the group to start');
    expect((await mainIn(p.dir, ['logs', 'a'])).stdout).toBe('hello a b c d\n');
    expect((await mainIn(p.dir, ['logs', 'b'])).stderr).toContain("an item run in a group prints to its group's log, shown once it ends");
    expect((await run.done).code).toBe(0);
    expect((await mainIn(p.dir, ['logs', 'b'])).stdout).toBe('hello a b c d\n');
  });

  it('--results gives every item of a group the output of the command that ran it', async () => {
    const p = project();
    const r = await mainIn(p.dir, ['run', '-n', '3', '-j', '1', '--results', 'res', '--exec', './check.sh {}', ':::', 'a', 'b', 'c', 'd']);
    expect(r.code, r.stderr).toBe(0);
    const out = (k: string) => readFileSync(join(p.dir, 'res', '1', k, 'stdout'), 'utf8');
    expect([out('a'), out('b'), out('c'), out('d')]).toEqual(['ok a b c\n', 'ok a b c\n', 'ok a b c\n', 'ok d\n']);
  });

  it('stages with groups: each stage groups its own items, and a stage runs an item only after the one it needs', async () => {
    const p = project();
    const log = join(p.dir, 'stages.log');
    writeFileSync(
      join(p.dir, 'job.json'),
      JSON.stringify({
        stages: [
          { name: 'first', exec: `./check.sh first {} && printf 'first %s\\n' {} >> ${log}`, maxArgs: 4 },
          { name: 'second', needs: ['first'], exec: `printf 'second %s\\n' {} >> ${log}`, maxArgs: 3 },
        ],
      }),
    );
    writeFileSync(join(p.dir, 'list.txt'), numbers(10).join('\n') + '\n');
    const r = await mainIn(p.dir, ['run', '--job', 'job.json', '--items', 'list.txt', '-j', '2']);
    expect(r.code, r.stderr).toBe(0);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    for (const n of numbers(10)) expect(lines.indexOf(`first ${n}`), n).toBeLessThan(lines.indexOf(`second ${n}`));
    expect(lines.filter((l) => l.startsWith('second'))).toHaveLength(10);
    // Grouped: the first stage's commands held more than one item.
    expect(p.calls().some((c) => c.length > 2)).toBe(true);
    expect((await tasksIn(p.db)).every((t) => t.status === 'SUCCESS')).toBe(true);
  });

  it.skipIf(!PG_URL)('on PostgreSQL: one bad item in a group ends FAILED alone, every other SUCCESS', async () => {
    const p = project();
    p.bad(['7']);
    const { db } = newSchema();
    const r = await mainIn(p.dir, ['run', '--db', db, '-n', '5', '-j', '2', '--retries', '0', '--exec', './check.sh {}', ':::', ...numbers(20)]);
    expect(r.code, r.stderr).toBe(1);
    const tasks = await tasksIn(db);
    expect(tasks.filter((t) => t.status === 'FAILED').map((t) => t.key)).toEqual(['7']);
    expect(tasks.filter((t) => t.status === 'SUCCESS')).toHaveLength(19);
  });
});
