import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, handler, runCli, tempDir } from '../helpers/cli.js';
import { missing } from '../helpers/services.js';
import { attemptsIn } from '../helpers/read-store.js';
import { dbPathIn, storedAttempts, storedTasks } from '../helpers/store.js';

/** `--pipe` and `task.read()`: a command or a module gets its chunk's (or item's) bytes, not the whole file. */

/** A file of `size` bytes of lines of random length (some empty, one far longer than the rest). */
function linesFile(path: string, size: number): number {
  const buf = Buffer.alloc(size, 0x61);
  let seed = 7;
  let lines = 0;
  for (let at = 0; at < size; ) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    at += at === 1000 ? 300_000 : seed % 200;
    if (at < size) {
      buf[at++] = 0x0a;
      lines++;
    }
  }
  writeFileSync(path, buf);
  return lines;
}

describe('--pipe', () => {
  it("on a 64 MiB file, the chunks' `wc -l` sum to the file's line count (a direct command, no shell)", async () => {
    const dir = tempDir();
    const lines = linesFile(join(dir, 'big.txt'), 64 * 1024 * 1024);
    const r = await runCli(['run', 'big.txt', '--chunk-size', '4MiB', '--pipe', '--exec', 'wc -l', '-j', '2'], { cwd: dir, timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/warning/); // the chunk is on stdin: nothing reads the whole file
    const tails = (await storedAttempts(dbPathIn(dir))).filter((a) => a.outcome === 'SUCCESS');
    expect(tails.length).toBeGreaterThanOrEqual(16);
    expect(tails.reduce((sum, t) => sum + Number(t.outputTail!.trim()), 0)).toBe(lines);
  }, 150_000);

  it("a module handler's task.read() is its chunk, or its item's bytes (with task.item and task.record)", async () => {
    const dir = tempDir();
    const lines = linesFile(join(dir, 'f.txt'), 2 * 1024 * 1024);
    // The file is complete and ends mid-line: --finished runs its last line now.
    const r = await runCli(['run', 'f.txt', '--lines', '1000', '--finished', '--handler', handler('count-lines')], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    const results = (await storedTasks(dbPathIn(dir))).map((t) => JSON.parse(t.result!) as { lines: number; bytes: number });
    expect(results.reduce((s, x) => s + x.lines, 0)).toBe(lines);
    expect(results.reduce((s, x) => s + x.bytes, 0)).toBe(2 * 1024 * 1024);

    writeFileSync(join(dir, 'u.jsonl'), '{"id":"a","n":1}\n');
    const j = await runCli(['run', '--items', 'u.jsonl', '--batch', 'j', '--handler', handler('count-lines')], { cwd: dir });
    expect(j.code, j.stderr).toBe(0);
    const [row] = await storedTasks(dbPathIn(dir), 'j');
    expect(JSON.parse(row!.result!)).toEqual({ lines: 0, bytes: 16, item: '{"id":"a","n":1}', record: { id: 'a', n: 1 } });
  });

  it('a command that stops reading early (head -c 1) succeeds; every chunk gets its own first byte', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'f.txt'), ['a', 'b', 'c'].map((c) => `${c}${'x'.repeat(2 * 1024 * 1024)}\n`).join(''));
    const r = await runCli(['run', 'f.txt', '--lines', '1', '--pipe', '--exec', 'head -c 1'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect((await attemptsIn(dbPathIn(dir))).map((a) => a.outputTail)).toEqual(['a', 'b', 'c']); // by task, in creation order
  });

  it.skipIf(missing('strace', 'the test that --pipe keeps the direct exec'))('keeps the direct-exec fast path: a simple command starts without a shell', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'f.txt'), 'a\nb\n');
    const trace = join(dir, 'trace.txt');
    execFileSync('strace', ['-f', '-qq', '-e', 'trace=execve', '-e', 'signal=none', '-o', trace, process.execPath, BIN, 'run', 'f.txt', '--lines', '1', '--pipe', '--exec', 'wc -l', '-j', '1'], { cwd: dir, stdio: 'ignore' });
    const execs = readFileSync(trace, 'utf8').split('\n').filter((l) => l.includes('execve(') && !l.includes('ENOENT'));
    expect(execs.filter((l) => /execve\("[^"]*\/wc", \["wc", "-l"\]/.test(l))).toHaveLength(2);
    expect(execs.filter((l) => l.includes('execve("/bin/sh"'))).toEqual([]);
    expect((await storedAttempts(dbPathIn(dir))).map((a) => a.outputTail?.trim())).toEqual(['1', '1']);
  });

  it("without --pipe, the warning about a chunked file's whole path points at --pipe", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'f.txt'), 'a\nb\n');
    const r = await runCli(['run', 'f.txt', '--lines', '1', '--exec', 'wc -l {}'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/warning: .*whole file's path for every chunk.*add --pipe to give the command only its chunk/);
  });

  it('--pipe without --exec is exit 2', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'f.txt'), 'x\n');
    const r = await runCli(['run', 'f.txt', '--pipe', '--handler', handler('ok')], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--pipe goes with --exec/);
  });
});
