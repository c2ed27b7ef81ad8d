import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';

// SPEC §7: a command's own output, when asked (--print, with --tag and --keep-order as in GNU
// parallel), is also printed on the run's stdout, whole per attempt, never interleaved mid-line;
// stderr goes to stderr; the logs stay as they are.

/** Three lines per task with pauses between them, so attempts running side by side would interleave if streamed. */
const SLOW_LINES = 'for i in 1 2 3; do echo "{key} line $i"; sleep 0.05; done; echo "{key} oops" >&2; printf "{key} last"';

/** The printed lines in groups of consecutive lines of one key. */
function blocks(stdout: string): string[] {
  const keys = stdout.split('\n').filter(Boolean).map((l) => l.split(' ')[0]!);
  return keys.filter((k, i) => i === 0 || keys[i - 1] !== k);
}

// --print makes the run choose the Node launcher by setting SPLITDANCE_SPAWNER in this process
// (src/run/batch-pool.ts): put it back after each test so no other test inherits it.
const spawnerBefore = process.env.SPLITDANCE_SPAWNER;
afterEach(() => {
  if (spawnerBefore === undefined) delete process.env.SPLITDANCE_SPAWNER;
  else process.env.SPLITDANCE_SPAWNER = spawnerBefore;
});

describe('run --print', () => {
  it("prints each attempt's stdout whole on stdout and its stderr on stderr; the logs keep both", async () => {
    const p = projectWithFiles(8);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', SLOW_LINES, '--print', '-j', '4']);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split('\n').filter(Boolean);
    expect(lines).toHaveLength(8 * 4);
    expect(blocks(r.stdout).sort()).toEqual(p.keys); // one block per attempt: nothing mid-way
    for (const key of p.keys) {
      expect(r.stdout).toContain(`${key} line 1\n${key} line 2\n${key} line 3\n${key} last\n`); // a last line without newline gets one
      expect(r.stderr).toContain(`${key} oops\n`);
    }
    expect(r.stdout).not.toContain('oops');
    const log = await mainIn(p.dir, ['logs', 'f003.log']);
    expect(log.stdout).toBe('f003.log line 1\nf003.log line 2\nf003.log line 3\nf003.log oops\nf003.log last');
  });

  it('--tag starts each line with the key and a tab; --keep-order prints in task order', async () => {
    const p = projectWithFiles(6);
    // Later tasks finish first: without --keep-order they would print first.
    const exec = 'n=$(cut -c6- "$SPLITDANCE_PATH"); sleep 0.$((5 - n)); echo one; echo two';
    const r = await mainIn(p.dir, ['run', 'src', '--exec', exec, '--print', '--tag', '--keep-order', '-j', '6']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(p.keys.map((k) => `${k}\tone\n${k}\ttwo\n`).join(''));
  });

  it("a module handler's console.log goes to stdout and console.error to stderr", async () => {
    const p = projectWithFiles(3);
    const mod = join(p.dir, 'talk.mjs');
    writeFileSync(mod, "export default async (task) => { console.log('hello', task.key); console.error('warn', task.key); };\n");
    const r = await mainIn(p.dir, ['run', 'src', '--handler', mod, '--print', '--tag', '--keep-order', '-j', '2']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(p.keys.map((k) => `${k}\thello ${k}\n`).join(''));
    for (const k of p.keys) expect(r.stderr).toContain(`${k}\twarn ${k}\n`);
  });

  it('the job file\'s "print", worker --print and retry-failed --run --print print too', async () => {
    const p = projectWithFiles(2);
    const db = join(p.dir, 'store.db');
    writeFileSync(join(p.dir, 'job.json'), JSON.stringify({ source: 'src', exec: 'echo got {key}; test -e ok', retries: 0, print: true }));
    const first = await mainIn(p.dir, ['run', '--job', 'job.json', '--db', db]);
    expect(first.code).toBe(1);
    expect(first.stdout).toContain('got f000.log\n');
    expect((await mainIn(p.dir, ['retry-failed', '--db', db])).code).toBe(0); // PENDING again, for the worker
    const worker = await mainIn(p.dir, ['worker', '--db', db, '--print', '--tag', '--keep-order', '-j', '2']);
    expect(worker.code).toBe(1);
    expect(worker.stdout).toBe('f000.log\tgot f000.log\nf001.log\tgot f001.log\n');
    writeFileSync(join(p.dir, 'ok'), '');
    const retried = await mainIn(p.dir, ['retry-failed', '--run', '--print', '--db', db]);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout.split('\n').filter(Boolean).sort()).toEqual(['got f000.log', 'got f001.log']);
  });

  it('--print with --json is refused (exit 2, no store): the events own stdout', async () => {
    const p = projectWithFiles(2);
    for (const extra of [['--print'], ['--tag'], ['--keep-order']]) {
      const r = await mainIn(p.dir, ['run', 'src', '--exec', 'echo hi', '--json', ...extra]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('--print');
      expect(r.stdout).toBe('');
    }
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
    expect((await mainIn(p.dir, ['retry-failed', '--print'])).code).toBe(2);
  });
});
