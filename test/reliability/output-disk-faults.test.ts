import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCli, tempDir, waitFor, type CliResult } from '../helpers/cli.js';
import { mainIn, startIn } from '../helpers/in-process-cli.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
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

/** The CLI under strace with `strace` options (`-o FILE` keeps its trace), as a real process; one that hangs is killed (as runCli's). */
function underStrace(strace: string[], args: string[], cwd: string): Promise<CliResult> {
  return new Promise((done) => {
    const child = spawn('strace', ['-f', '-qq', ...strace, process.execPath, BIN, ...args], { cwd, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b) => (stdout += b));
    child.stderr.on('data', (b) => (stderr += b));
    const timer = setTimeout(() => child.kill('SIGKILL'), 50_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout, stderr });
    });
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
    // (By the binary: made in this process instead, this test failed twice on a loaded machine, cause not found.)
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
    const tasks = JSON.parse((await mainIn(p.dir, ['tasks', '--json', '--batch', 'slow-disk'])).stdout) as { status: string; lastError: string | null }[];
    expect(tasks).toMatchObject([{ status: 'SUCCESS', lastError: null }]);
    expect(readFileSync(join(p.dir, 'out', 'f0.txt'), 'utf8')).toBe('f0.txt\n');
  });
});

/** Every rename syscall fails with `errno` (libuv's rename is rename(2) here, renameat or renameat2 elsewhere). */
const renameFails = (errno: string) => ['-o', '/dev/null', '-e', 'trace=rename,renameat,renameat2', '-e', `inject=rename,renameat,renameat2:error=${errno}`];
const exec = ['--exec', 'cat {} > {out}', '--output', 'out/{rel}', '-j', '2'];

const freshPg = pgSchemas('outfaults');
/** Both stores: the default SQLite file (no --db), and a fresh schema on the PostgreSQL server. */
const STORES = [{ store: 'SQLite', db: (): string[] => [] }, ...(PG_URL ? [{ store: 'PostgreSQL', db: () => ['--db', freshPg().db] }] : [])];

async function statusOf(batch: string, cwd: string, db: string[] = []) {
  const r = await mainIn(cwd, ['status', '--json', '--batch', batch, ...db]);
  return { code: r.code, ...(JSON.parse(r.stdout) as { done: boolean; succeeded: number; outputsPending: number; pendingOutputs: { key: string; out: string; temp: string }[] }) };
}

/** The files in the output folder, hidden temporary ones included. */
const outFiles = (dir: string) => (existsSync(join(dir, 'out')) ? readdirSync(join(dir, 'out')).sort() : []);

describe.skipIf(!hasStrace).each(STORES)('declared outputs on $store: a committed output whose rename fails (R41)', ({ db: dbFor }) => {
  it('EXDEV: the run exits 3 naming the outputs, status and show say they are pending; the next run places them', async () => {
    const p = project(4);
    const db = dbFor();
    const outs = p.keys.map((k) => join(p.dir, 'out', k));
    const r = await underStrace(renameFails('EXDEV'), ['run', 'src', '--batch', 'night-1', ...exec, ...db], p.dir);
    expect(r.code, r.stderr).toBe(3); // incomplete, never 0: no output is where its success says
    expect(r.stderr).toContain('incomplete: 4 declared outputs not in place');
    for (const out of outs) expect(r.stderr).toContain(`declared output could not be moved onto ${out}: EXDEV`);
    expect(r.stderr).not.toMatch(/^done/m);
    for (const out of outs) expect(existsSync(out)).toBe(false);

    const s = await statusOf('night-1', p.dir, db);
    expect(s).toMatchObject({ code: 3, done: false, succeeded: 4, outputsPending: 4 });
    expect(s.pendingOutputs.map((o) => [o.key, o.out])).toEqual(p.keys.map((k, i) => [k, outs[i]]));
    for (const o of s.pendingOutputs) expect(readFileSync(o.temp, 'utf8')).toBe(`${o.key}\n`); // the committed content, kept
    const human = await mainIn(p.dir, ['status', '--batch', 'night-1', ...db]);
    expect(human.code).toBe(3);
    expect(human.stdout).toContain('4 declared outputs not in place');
    expect(human.stdout).toContain(`f0.txt → ${outs[0]}`);
    expect(human.stdout).not.toMatch(/^finished/m);
    const shown = JSON.parse((await mainIn(p.dir, ['show', 'f0.txt', '--json', '--batch', 'night-1', ...db])).stdout);
    expect(shown.outputPending).toEqual({ out: outs[0], temp: s.pendingOutputs[0]!.temp });
    expect((await mainIn(p.dir, ['show', 'f0.txt', '--batch', 'night-1', ...db])).stdout).toContain(`declared output not in place: ${outs[0]}`);

    // watch waits too: a line per look, and it ends only once the outputs are in place.
    const watch = startIn(p.dir, ['watch', '--batch', 'night-1', '--interval', '200ms', ...db]);
    const looks = () => watch.stdout().split('\n').length - 1;
    await waitFor(() => looks() >= 2, 20_000, 'a second look of watch (one that ends at its first took the batch for done)');

    // The same batch again, with the disk fixed: the outputs go in place.
    const again = await mainIn(p.dir, ['run', 'src', '--batch', 'night-1', ...exec, ...db]);
    expect(again.code, again.stderr).toBe(0);
    expect((await watch.done).code).toBe(0);
    expect(outFiles(p.dir)).toEqual(p.keys);
    for (const [i, k] of p.keys.entries()) expect(readFileSync(outs[i]!, 'utf8')).toBe(`${k}\n`);
    expect(await statusOf('night-1', p.dir, db)).toMatchObject({ code: 0, done: true, outputsPending: 0, pendingOutputs: [] });
    expect(JSON.parse((await mainIn(p.dir, ['show', 'f0.txt', '--json', '--batch', 'night-1', ...db])).stdout).outputPending).toBeNull();
  });
});

describe.skipIf(!hasStrace)('declared outputs: a committed output whose rename fails, later batches (R41)', () => {
  it('EROFS, then a new batch declaring the same outputs: it places them and finds them up to date; one that still cannot be moved is named', async () => {
    const p = project(3);
    // Each night's output names its batch: the file that ends up in place says whose it is.
    const exec = ['--exec', 'echo {batch} {key} > {out}', '--output', 'out/{rel}', '-j', '2'];
    const first = await underStrace(renameFails('EROFS'), ['run', 'src', '--batch', 'night-1', ...exec], p.dir);
    expect(first.code, first.stderr).toBe(3);
    expect(first.stderr).toContain('EROFS');

    // The next night's batch, its disk still refusing: it tries the first night's outputs and
    // says why each cannot be moved, and its own are pending too.
    const second = await underStrace(renameFails('EACCES'), ['run', 'src', '--batch', 'night-2', ...exec], p.dir);
    expect(second.code, second.stderr).toBe(3);
    const firstTemps = (await statusOf('night-1', p.dir)).pendingOutputs.map((o) => o.temp);
    expect(firstTemps).toHaveLength(3);
    for (const t of firstTemps) expect(second.stderr).toContain(`rename '${t}' -> `);
    expect(second.stderr).toContain('EACCES');

    // The third night, the disk fixed: every output in place (the newest success's file), both
    // earlier batches finished, nothing left at a temporary path, and nothing ran again.
    const third = await mainIn(p.dir, ['run', 'src', '--batch', 'night-3', ...exec, '--json']);
    expect(third.code, third.stderr).toBe(0);
    expect(JSON.parse(third.stdout.trim().split('\n').at(-1)!)).toMatchObject({ event: 'end', succeeded: 3, upToDate: 3 });
    expect(outFiles(p.dir)).toEqual(p.keys);
    for (const k of p.keys) expect(readFileSync(join(p.dir, 'out', k), 'utf8')).toBe(`night-2 ${k}\n`);
    for (const b of ['night-1', 'night-2']) expect(await statusOf(b, p.dir)).toMatchObject({ code: 0, done: true, outputsPending: 0 });
  });

  it('with stages: the stage that needs a pending output waits, and the run ends (exit 3) instead of waiting for the disk', async () => {
    const p = project(2);
    const job = {
      source: 'src',
      stages: [
        { name: 'a', exec: 'cat {} > {out}', output: 'out/a/{rel}' },
        { name: 'b', needs: ['a'], exec: 'cat {inputs.a.out} > {out}', output: 'out/b/{rel}' },
      ],
    };
    writeFileSync(join(p.dir, 'job.json'), JSON.stringify(job));
    const r = await underStrace(renameFails('EXDEV'), ['run', '--job', 'job.json'], p.dir);
    expect(r.signal, 'the run ended by itself').toBeNull();
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain('incomplete: 2 declared outputs not in place');
    const tasks = JSON.parse((await mainIn(p.dir, ['tasks', '--json'])).stdout) as { key: string; status: string }[];
    expect(tasks.map((t) => [t.key, t.status]).sort()).toEqual([...p.keys.map((k) => [`a/${k}`, 'SUCCESS']), ...p.keys.map((k) => [`b/${k}`, 'PENDING'])]);

    const again = await mainIn(p.dir, ['run', '--job', 'job.json']);
    expect(again.code, again.stderr).toBe(0);
    for (const k of p.keys) expect(readFileSync(join(p.dir, 'out', 'b', k), 'utf8')).toBe(`${k}\n`);
  });
});
