import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCli, tempDir } from '../helpers/cli.js';
import { dbPathIn, storedTasks } from '../helpers/store.js';

/**
 * GNU parallel's input sources on splitdance's command line (SPEC §3): `:::`, `::::`, `:::+`,
 * `-a`, `-0`, `-d`, side by side with parallel's own output on the same input, and resumable
 * as any items are.
 */

/** GNU parallel, one job at a time so its output is in input order; `-q` passes the command's words as they are. */
function parallel(args: string[], opts: { cwd: string; input?: string | Buffer }): string {
  const r = spawnSync('parallel', ['--will-cite', '-j1', '-q', ...args], { cwd: opts.cwd, input: opts.input, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

/** splitdance's run, one worker, each attempt's output printed as it ends (so in claim order, which is input order). */
async function run(args: string[], opts: { cwd: string; input?: string | Buffer }) {
  return runCli(['run', '-j', '1', '--print', ...args], opts);
}

const SHOW = ['printf', '[%s][%s]\\n', '{1}', '{2}'];
const EXEC = ['--exec', "printf '[%s][%s]\\n' {1} {2}"];

describe('::: and :::: as in GNU parallel', () => {
  it('several groups run their product in parallel\'s order, each value exact (spaces, tabs, newlines, quotes, empty)', async () => {
    const dir = tempDir();
    const first = ['a b', '', `it's "q" $(touch pwned)`, 'tab\there'];
    const second = ['c', 'd  e'];
    const ours = await run([...EXEC, ':::', ...first, ':::', ...second], { cwd: dir });
    expect(ours.code, ours.stderr).toBe(0);
    expect(ours.stdout).toBe(parallel([...SHOW, ':::', ...first, ':::', ...second], { cwd: dir }));
    expect(spawnSync('ls', [dir], { encoding: 'utf8' }).stdout).not.toContain('pwned');
    // parallel cuts a ::: value at its newline into two values; here a value is passed whole.
    const newline = await run(['--batch', 'nl', ...EXEC, ':::', 'new\nline', ':::', 'c'], { cwd: dir });
    expect(newline.stdout).toBe('[new\nline][c]\n');
    // {} is every value joined by a space, as parallel joins them.
    const joined = await run(['--exec', "printf '<%s>\\n' {}", ':::', 'a', 'b', ':::', 'x  y'], { cwd: dir });
    expect(joined.stdout).toBe('<a x  y>\n<b x  y>\n');
  });

  it("'a b' c and a 'b c' are two tasks; the same command again runs nothing, a value added runs only its combinations", async () => {
    const dir = tempDir();
    const one = await run([...EXEC, ':::', 'a b', 'a', ':::', 'c', 'b c'], { cwd: dir });
    expect(one.code, one.stderr).toBe(0);
    expect(one.stderr).toMatch(/4 tasks \(4 new\)/);
    const keys = (await storedTasks(dbPathIn(dir))).map((t) => t.key); // creation order
    expect(keys).toEqual(['["a b","c"]', '["a b","b c"]', '["a","c"]', '["a","b c"]']);
    const again = await run([...EXEC, ':::', 'a b', 'a', ':::', 'c', 'b c'], { cwd: dir });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/4 tasks \(0 new\)/);
    expect(again.stdout).toBe('');
    const more = await run([...EXEC, ':::', 'a b', 'a', 'z', ':::', 'c', 'b c'], { cwd: dir });
    expect(more.code, more.stderr).toBe(0);
    expect(more.stderr).toMatch(/6 tasks \(2 new\)/);
    expect(more.stdout).toBe('[z][c]\n[z][b c]\n');
  });

  it('retry-failed --run runs the stored values again, without the command line that gave them', async () => {
    const dir = tempDir();
    const first = await run(['--exec', 'test {1} != b', '--retries', '0', ':::', 'a', 'b'], { cwd: dir });
    expect(first.code, first.stderr).toBe(1);
    const retry = await runCli(['retry-failed', '--run'], { cwd: dir });
    expect(retry.code, retry.stderr).toBe(1);
    expect(retry.stderr).toMatch(/2 tasks \(0 new\)/);
    expect(retry.stderr).toMatch(/FAILED b after 2 attempts/);
  });

  it(':::+ links groups value by value, :::: and -a read files, as parallel does', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'f1'), '1\n2\n');
    writeFileSync(join(dir, 'f2'), 'x\ny\n');
    for (const sources of [
      [':::', 'a', 'b', 'c', ':::+', '1', '2', '3'],
      ['::::', 'f1', 'f2'],
      [':::', 'a', 'b', '::::+', 'f1'],
      ['-a', 'f1', ':::', 'q', 'r'],
    ]) {
      const ours = await run(['--batch', sources.join('_'), ...EXEC, ...sources], { cwd: dir });
      expect(ours.code, ours.stderr).toBe(0);
      expect(ours.stdout, sources.join(' ')).toBe(parallel([...(sources[0] === '-a' ? ['-a', 'f1'] : []), ...SHOW, ...(sources[0] === '-a' ? sources.slice(2) : sources)], { cwd: dir }));
    }
    // `:::: -` is stdin.
    const stdin = await run(['--batch', 'stdin-group', ...EXEC, '::::', '-', ':::', 'k'], { cwd: dir, input: 'p\nq\n' });
    expect(stdin.stdout).toBe('[p][k]\n[q][k]\n');
  });
});

describe('-0 and -d as in GNU parallel', () => {
  it('find -print0 | run - -0: names with newlines and spaces are one item each, as parallel -0 reads them', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'tree'));
    for (const name of ['plain', 'a b', 'new\nline', ' lead']) writeFileSync(join(dir, 'tree', name), '');
    const list = spawnSync('find', ['tree', '-type', 'f', '-print0'], { cwd: dir }).stdout;
    const show = ['printf', '<%s>\\n', '{}'];
    const ours = await run(['-', '-0', '--exec', "printf '<%s>\\n' {}"], { cwd: dir, input: list });
    expect(ours.code, ours.stderr).toBe(0);
    expect(ours.stdout).toBe(parallel(['-0', ...show], { cwd: dir, input: list }));
    expect(ours.stdout).toContain('<tree/new\nline>');
    writeFileSync(join(dir, 'list0'), list);
    for (const how of [['--items', 'list0', '-0'], ['-0', ':::', 'x', '::::', 'list0'], ['--null', '--items', 'list0']]) {
      const r = await run(['--batch', how.join('_'), '--exec', "printf '<%s>\\n' {}", ...how], { cwd: dir });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.split('>\n').length - 1, how.join(' ')).toBe(4);
    }
  });

  it('-d with an escape or several characters; a trailing delimiter makes no empty item', async () => {
    const dir = tempDir();
    for (const [delim, input] of [['\\t', 'a b\tc\nd\t'], ['XY', 'aXYbXY'], [',', 'a,b,c']]) {
      const ours = await run(['--batch', `d${input.length}`, '-d', delim!, '--exec', "printf '<%s>\\n' {}", '-'], { cwd: dir, input });
      expect(ours.code, ours.stderr).toBe(0);
      expect(ours.stdout, delim).toBe(parallel(['-d', delim!, 'printf', '<%s>\\n', '{}'], { cwd: dir, input }));
    }
  });
});

describe('a list that can be read once', () => {
  it('--items <(cmd) and :::: <(cmd) (bash process substitution) are read as stdin is', () => {
    const dir = tempDir();
    const sh = (line: string) => spawnSync('bash', ['-c', line], { cwd: dir, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
    const items = sh(`node ${BIN} run -j 1 --print --exec 'echo [{}]' --items <(printf 'p\\nq\\n')`);
    expect(items.status, items.stderr).toBe(0);
    expect(items.stdout).toBe('[p]\n[q]\n');
    const again = sh(`node ${BIN} run -j 1 --print --exec 'echo [{}]' --items <(printf 'p\\nq\\nr\\n')`);
    expect(again.stderr).toMatch(/3 tasks \(1 new\)/);
    expect(again.stdout).toBe('[r]\n');
    const group = sh(`node ${BIN} run -j 1 --print --exec 'echo [{1}{2}]' ::: a b :::: <(printf '1\\n2\\n')`);
    expect(group.status, group.stderr).toBe(0);
    expect(group.stdout).toBe('[a1]\n[a2]\n[b1]\n[b2]\n');
    // As the source itself, a FIFO cannot be chunked: exit 2 naming --items <(cmd).
    const source = sh(`node ${BIN} run --exec 'echo {}' <(printf 'p\n')`);
    expect(source.status).toBe(2);
    expect(source.stderr).toMatch(/neither a directory nor a regular file; a list on stdin is `run -`, from a command `--items <\(cmd\)`/);
  });
});
