import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCli, tempDir, type CliResult } from '../helpers/cli.js';
import { missing } from '../helpers/services.js';

const hasStrace = !missing('strace', 'the declared outputs under disk faults tests');

/** A source folder of `n` small files an hour old (an output written now is newer). */
function project(n: number): { dir: string; keys: string[] } {
  const dir = tempDir('sd-outfault-');
  mkdirSync(join(dir, 'src'));
  const keys = Array.from({ length: n }, (_, i) => `f${i}.txt`);
  const past = new Date(Date.now() - 3_600_000);
  for (const k of keys) {
    writeFileSync(join(dir, 'src', k), `${k}\n`);
    utimesSync(join(dir, 'src', k), past, past);
  }
  return { dir, keys };
}

/** The CLI under strace with `strace` options (`-o FILE` keeps its trace), as a real process. */
function underStrace(strace: string[], args: string[], cwd: string): Promise<CliResult> {
  return new Promise((done) => {
    const child = spawn('strace', ['-f', '-qq', ...strace, process.execPath, BIN, ...args], { cwd, env: { ...process.env, NO_COLOR: '1' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b) => (stdout += b));
    child.stderr.on('data', (b) => (stderr += b));
    child.on('close', (code, signal) => done({ code, signal, stdout, stderr }));
  });
}

/** How the fsync of the file `path` matches ended in an strace -f -y trace (its line, or its `resumed` line when another thread's call cut it). */
function syncEnded(trace: string, path: RegExp): string {
  const lines = trace.split('\n');
  const i = lines.findIndex((l) => /fsync\(\d+</.test(l) && path.test(l));
  if (i < 0 || !lines[i]!.includes('<unfinished')) return lines[i] ?? 'never synced';
  const pid = lines[i]!.split(' ')[0];
  return lines.slice(i + 1).find((l) => l.startsWith(`${pid} `) && l.includes('fsync resumed')) ?? 'never returned';
}

describe.skipIf(!hasStrace)('declared outputs: a slow disk', () => {
  it("a declared output's sync does not count against --timeout: it covers the command", async () => {
    const p = project(1);
    // The store exists first: its creation's syncs are not what this is about.
    expect((await runCli(['run', 'src', '--batch', 'first', '--exec', 'true'], { cwd: p.dir })).code).toBe(0);
    const trace = join(p.dir, 'trace.txt');
    // The first fsync of each thread waits 5 s, and the temporary file's sync is the first of
    // the thread that runs it (checked below): a command of a few ms under a 1 s timeout, then a
    // sync that outlasts the timeout, the kill grace (2 s) and the second after it.
    const slow = ['-y', '-o', trace, '-e', 'trace=fsync', '-e', 'inject=fsync:delay_enter=5s:when=1'];
    const args = ['run', 'src', '--batch', 'slow-disk', '--exec', 'cat {} > {out}', '--output', 'out/{rel}', '--timeout', '1s', '--retries', '0', '-j', '1'];
    const r = await underStrace(slow, args, p.dir);
    expect(syncEnded(readFileSync(trace, 'utf8'), /\/out\/\.f0\.txt\.splitdance-[^>]*\.tmp>/), 'the temporary file was synced slowly').toContain('(DELAYED)');
    expect(r.code, r.stderr).toBe(0);
    const tasks = JSON.parse((await runCli(['tasks', '--json', '--batch', 'slow-disk'], { cwd: p.dir })).stdout) as { status: string; lastError: string | null }[];
    expect(tasks).toMatchObject([{ status: 'SUCCESS', lastError: null }]);
    expect(readFileSync(join(p.dir, 'out', 'f0.txt'), 'utf8')).toBe('f0.txt\n');
  });
});
