import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../helpers/cli.js';
import { dbPathIn, query, storedTasks } from '../helpers/store.js';

/** JSON Lines read exactly, edited records, and the size of one item (audit 4, items 3, 13, 10), through the built CLI. */

const MiB = 1024 * 1024;
/** The documented limit of one item (docs/bounds-and-streams.md). */
const MAX_ITEM = 16 * MiB;
const TIME = '/usr/bin/time';

/** The peak RSS GNU time reports for the command, in bytes. */
function maxRss(stderr: string): number {
  const m = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr);
  expect(m, stderr.slice(-2000)).not.toBeNull();
  return Number(m![1]) * 1024;
}

describe('JSON Lines records are read exactly', () => {
  it('two 64-bit ids one double would merge are two tasks, and {item.id} hands each its own digits', async () => {
    const dir = tempDir();
    const out = join(dir, 'out');
    mkdirSync(out);
    writeFileSync(join(dir, 'ids.jsonl'), '{"id":12345678901234567891,"n":1.50}\n{"id":12345678901234567892,"n":2}\n');
    const r = await runCli(['run', '--items', 'ids.jsonl', '--key-field', 'id', '--exec', 'printf %s {item.n} > "$OUT"/{item.id}'], { cwd: dir, env: { OUT: out } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/repeated/);
    expect(readdirSync(out).sort()).toEqual(['12345678901234567891', '12345678901234567892']);
    expect(readFileSync(join(out, '12345678901234567891'), 'utf8')).toBe('1.50');
    const rows = query(dbPathIn(dir), 'SELECT task_key, payload FROM tasks ORDER BY task_key') as { task_key: string; payload: string }[];
    expect(rows.map((t) => t.task_key)).toEqual(['12345678901234567891', '12345678901234567892']);
    // The stored payload keeps the digits: the line as it was, and the id as its text.
    expect(JSON.parse(rows[0]!.payload)).toMatchObject({ item: '{"id":12345678901234567891,"n":1.50}', record: { id: '12345678901234567891', n: 1.5 } });
  });

  it('"7" and 7 in one list is exit 2 naming both lines, and writes nothing', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'ids.jsonl'), '{"id":"7"}\n{"id":8}\n{"id":7}\n');
    const r = await runCli(['run', '--items', 'ids.jsonl', '--key-field', 'id', '--exec', 'true'], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/ids\.jsonl, lines 1 and 3: --key-field "id" is 7 as a number in one and "7" as a string/);
    expect(readdirSync(dir)).not.toContain('.splitdance');
  });
});

describe('a record edited in the list', () => {
  it('is noted (count and example, in 80 columns) and runs stored until --rerun-changed runs the new one', async () => {
    const dir = tempDir();
    const log = join(dir, 'ran.log');
    const list = join(dir, 'users.jsonl');
    const run = (extra: string[] = []) =>
      runCli(['run', '--items', 'users.jsonl', '--key-field', 'id', ...extra, '--exec', 'echo {item.id}={item.v} >> "$LOG"'], { cwd: dir, env: { LOG: log } });
    writeFileSync(list, '{"id":1,"v":"a"}\n{"id":2,"v":"a"}\n{"id":3,"v":"a"}\n');
    expect((await run()).code).toBe(0);
    writeFileSync(list, '{"v":"a","id":1}\n{"id":2,"v":"EDITED"}\n{"id":3,"v":"a"}\n');
    const again = await run();
    expect(again.code, again.stderr).toBe(0);
    const note = again.stderr.split('\n').find((l) => l.includes('changed in the list'));
    expect(note).toBe('1 record changed in the list (e.g. 2); --rerun-changed runs it');
    expect(readFileSync(log, 'utf8').split('\n').filter(Boolean).sort()).toEqual(['1=a', '2=a', '3=a']);

    const rerun = await run(['--rerun-changed']);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stderr).toMatch(/re-queued 1 task whose record changed in the list \(--rerun-changed\)/);
    expect(readFileSync(log, 'utf8').split('\n').filter(Boolean).sort()).toEqual(['1=a', '2=EDITED', '2=a', '3=a']);
    expect((await storedTasks(dbPathIn(dir))).filter((t) => t.key === '2').map(({ key, status, attempts }) => ({ key, status, attempts }))).toEqual([{ key: '2', status: 'SUCCESS', attempts: 1 }]);
    const quiet = await run();
    expect(quiet.stderr).not.toMatch(/changed in the list/);

    // A long key is cut so the line still fits a terminal.
    writeFileSync(list, `{"id":"${'k'.repeat(150)}","v":"a"}\n`);
    expect((await run()).code).toBe(0);
    writeFileSync(list, `{"id":"${'k'.repeat(150)}","v":"b"}\n`);
    const long = (await run()).stderr.split('\n').find((l) => l.includes('changed in the list'))!;
    expect(long).toMatch(/^1 record changed in the list \(e\.g\. k+…\); --rerun-changed runs it$/);
    expect([...long].length).toBeLessThanOrEqual(80);
  });
});

describe('a record edited in the list, with a declared output', () => {
  it('runs again with --rerun-changed although its output is in place: the output is the new record\'s', async () => {
    // An item's output is "up to date" whenever it exists (an item has no file to be newer
    // than), so the re-queued task was taken as done again: "re-queued 1 task", then "1 up to
    // date, not run", exit 0, and the output still the old record's.
    const dir = tempDir();
    const run = (list: string, extra: string[] = []) =>
      runCli(['run', '-', '--jsonl', '--key-field', 'id', '--batch', 'b1', ...extra, '--exec', 'echo {item.v} > {out}', '--output', 'o/{item.id}.txt'], { cwd: dir, input: list });
    expect((await run('{"id":1,"v":"old"}\n{"id":2,"v":"same"}\n')).code).toBe(0);
    expect(readFileSync(join(dir, 'o', '1.txt'), 'utf8')).toBe('old\n');
    const rerun = await run('{"id":1,"v":"new"}\n{"id":2,"v":"same"}\n', ['--rerun-changed']);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stderr).toMatch(/re-queued 1 task whose record changed/);
    expect(readFileSync(join(dir, 'o', '1.txt'), 'utf8')).toBe('new\n');
    const tasks = (await storedTasks(dbPathIn(dir))).map(({ key, upToDate }) => ({ key, upToDate })).sort((a, b) => (a.key < b.key ? -1 : 1));
    expect(tasks).toEqual([
      { key: '1', upToDate: false },
      { key: '2', upToDate: false },
    ]);
  });
});

describe.skipIf(!existsSync(TIME))('the size of one item', () => {
  it('a 100 MB line is exit 2 naming its line and the limit, read in memory bounded by the limit, the store untouched', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'small.txt'), 'a\nb\n');
    const small = await runCli(['run', '--items', 'small.txt', '--batch', 'b', '--exec', 'true'], { cwd: dir, under: [TIME, '-v'] });
    expect(small.code, small.stderr).toBe(0);
    const baseline = maxRss(small.stderr);
    const state = () => [query(dbPathIn(dir), 'SELECT name FROM batches'), query(dbPathIn(dir), 'SELECT task_key, status FROM tasks ORDER BY task_key')];
    const before = state();

    const big = join(dir, 'big.txt');
    const fd = openSync(big, 'w');
    writeSync(fd, '1\n2\n');
    const block = Buffer.alloc(MiB, 'x');
    for (let i = 0; i < 100; i++) writeSync(fd, block);
    writeSync(fd, '\n3\n');
    closeSync(fd);
    for (const args of [['--items', 'big.txt'], ['--items', 'big.txt', '--jsonl']]) {
      const r = await runCli(['run', ...args, '--batch', 'big', '--exec', 'true'], { cwd: dir, under: [TIME, '-v'], timeoutMs: 120_000 });
      expect(r.code, r.stderr.slice(-2000)).toBe(2);
      expect(r.stderr).toMatch(/big\.txt, line 3: the item is longer than 16 MiB, the limit of one item; put big data in a file/);
      // The line is never held past the limit: the peak is the run's own plus a few times the limit (the line was 100 MB).
      expect(maxRss(r.stderr)).toBeLessThan(baseline + 4 * MAX_ITEM);
      expect(state()).toEqual(before);
    }
  }, 240_000);
});
