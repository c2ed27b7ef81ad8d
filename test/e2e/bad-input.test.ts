import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCli, tempDir } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { missing } from '../helpers/services.js';

/** Every bad input: one line naming the thing and the fix, the documented code, no stack, the store untouched. */
function expectCleanError(r: { code: number | null; stderr: string }, code: number, pattern: RegExp) {
  expect(r.code).toBe(code);
  expect(r.stderr).toMatch(pattern);
  expect(r.stderr).not.toMatch(/\n\s+at /);
}

// Bad input a separate CLI process must meet: an environment read once as the process starts
// (SPLITDANCE_BUSY_TIMEOUT_MS), store paths whose open could block a process (a FIFO), a
// process traced by strace.
describe('bad input, nothing written', () => {
  it('an invalid SPLITDANCE_BUSY_TIMEOUT_MS is exit 2 naming it, for run and status; nothing written', async () => {
    const p = projectWithFiles(2);
    for (const value of ['abc', '-1', '1.5', '99999999999']) {
      for (const args of [['run', 'src', '--exec', 'true'], ['status']]) {
        const r = await runCli(args, { cwd: p.dir, env: { SPLITDANCE_BUSY_TIMEOUT_MS: value } });
        expectCleanError(r, 2, new RegExp(`SPLITDANCE_BUSY_TIMEOUT_MS expects a whole number of milliseconds .*got "${value.replace('.', '\\.')}"`));
      }
    }
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
  });

  it.skipIf(missing('root', 'the test that makes a private /dev/null'))('reading commands never write: an empty --db file stays empty; a FIFO or a device as --db is exit 4 at once, no journal beside it', async () => {
    const dir = tempDir();
    const empty = join(dir, 'empty.db');
    writeFileSync(empty, '');
    for (const args of [['status'], ['tasks'], ['batches'], ['status', '--json']]) {
      const r = await runCli([...args, '--db', empty], { cwd: dir });
      expectCleanError(r, 4, /no store at .*empty\.db: the file is empty/);
      expect(readFileSync(empty).length, args.join(' ')).toBe(0);
    }
    execFileSync('mkfifo', [join(dir, 'fifo.db')]);
    execFileSync('mknod', [join(dir, 'null.db'), 'c', '1', '3']); // a private /dev/null
    for (const [name, kind] of [['fifo.db', 'a FIFO'], ['null.db', 'a device']]) {
      for (const args of [['status'], ['run', dir, '--exec', 'true'], ['run', dir, '--exec', 'true', '--dry-run']]) {
        const r = await runCli([...args, '--db', join(dir, name)], { cwd: dir, timeoutMs: 20_000 });
        expectCleanError(r, 4, new RegExp(`store path .*${name} is ${kind}, not a store file`));
      }
    }
    expect(readdirSync(dir).sort()).toEqual(['empty.db', 'fifo.db', 'null.db']);
  });

  it.skipIf(missing('strace', 'the split test that fakes a vanished file'))('a file removed while the source is split (listed, then its stat fails): skipped with a note, the rest runs, no unexpected error', async () => {
    const p = projectWithFiles(4);
    const gone = join(p.src, 'f002.log');
    // strace makes every stat of that one file fail with ENOENT: the file vanished after the listing.
    const stats = 'statx,newfstatat,stat,lstat';
    const r = spawnSync('strace', ['-f', '-qq', '-o', '/dev/null', '-P', gone, '-e', `trace=${stats}`, '-e', `inject=${stats}:error=ENOENT`, process.execPath, BIN, 'run', 'src', '--exec', 'true'], {
      cwd: p.dir,
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1' },
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`skipped 1 .*\\(removed during the split\\): ${gone}`));
    expect(r.stderr).not.toMatch(/unexpected error/);
    const tasks = JSON.parse((await runCli(['tasks', '--json'], { cwd: p.dir })).stdout) as { key: string }[];
    expect(tasks.map((t) => t.key)).toEqual(['f000.log', 'f001.log', 'f003.log']);
  });
});
