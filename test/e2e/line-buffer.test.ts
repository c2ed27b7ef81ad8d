import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, startCli, tempDir } from '../helpers/cli.js';

// Issue 41, item 15: `--line-buffer` as in GNU parallel: the output printed line by line as it
// comes, each line whole, tagged with --tag; with --keep-order, the first task's lines as they
// come and the others' once it is done, as `parallel -k --line-buffer` does.

describe('run --line-buffer', () => {
  it('prints a line on stdout while its command still runs: the command waits for the test to have seen it', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.txt'), 'a\n');
    const go = join(dir, 'go');
    // The second line comes only once the test has seen the first (or after 20 s, saying so).
    const exec = `echo first {}; i=0; while [ ! -e ${go} ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; [ -e ${go} ] && echo second {} || echo too late {}`;
    const run = startCli(['run', '--items', 'list.txt', '--exec', exec, '--line-buffer', '--tag'], { cwd: dir });
    let seen = '';
    run.stdout!.on('data', (b: Buffer) => {
      seen += b.toString();
      if (seen.includes('a\tfirst a\n')) writeFileSync(go, '');
    });
    const r = await run.result;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('a\tfirst a\na\tsecond a\n');
  }, 60_000);

  it('with --tag --keep-order prints what `parallel --line-buffer --tag -k` prints; a last line without newline gets one', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.txt'), 'a\nb\nc\n');
    const cmd = 'echo one {}; sleep 0.3; echo two {}';
    const r = await runCli(['run', '--items', 'list.txt', '--exec', cmd, '--line-buffer', '--tag', '--keep-order', '-j', '3'], { cwd: dir });
    const parallel = spawnSync('parallel', ['--will-cite', '--line-buffer', '--tag', '-k', cmd, '::::', 'list.txt'], { cwd: dir, encoding: 'utf8' });
    expect(r.code, r.stderr).toBe(0);
    expect(parallel.stdout).toBe('a\tone a\na\ttwo a\nb\tone b\nb\ttwo b\nc\tone c\nc\ttwo c\n');
    expect(r.stdout).toBe(parallel.stdout);
    const last = await runCli(['run', '--items', 'list.txt', '--exec', 'printf "no newline {}"', '--line-buffer', '--keep-order', '--batch', 'nl'], { cwd: dir });
    expect(last.stdout).toBe('no newline a\nno newline b\nno newline c\n');
  }, 60_000);

  it('without --keep-order every line is whole and tagged, as in parallel; the lines of every attempt are printed', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.txt'), 'a\nb\nc\nd\n');
    const cmd = 'for i in 1 2 3; do echo "line $i of {}"; sleep 0.1; done';
    const r = await runCli(['run', '--items', 'list.txt', '--exec', cmd, '--line-buffer', '--tag', '-j', '4'], { cwd: dir });
    const parallel = spawnSync('parallel', ['--will-cite', '--line-buffer', '--tag', cmd, '::::', 'list.txt'], { cwd: dir, encoding: 'utf8' });
    expect(r.code, r.stderr).toBe(0);
    const sorted = (text: string) => text.split('\n').filter(Boolean).sort();
    expect(sorted(r.stdout)).toEqual(sorted(parallel.stdout));
    for (const l of r.stdout.split('\n').filter(Boolean)) expect(l).toMatch(/^([abcd])\tline [123] of \1$/);
    // A retried attempt's lines are printed as they come too (GNU parallel has no retries to compare with).
    const retried = await runCli(['run', '--items', 'list.txt', '--exec', 'echo try {attempt}; [ {attempt} -gt 1 ] || { echo down >&2; exit 1; }', '--line-buffer', '--backoff', '10ms', '--batch', 'r', '-j', '1'], { cwd: dir });
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout.split('\n').filter(Boolean).sort()).toEqual([...Array(4).fill('try 1'), ...Array(4).fill('try 2')]);
  }, 60_000);
});
