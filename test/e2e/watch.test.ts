import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startCli, waitFor, type CliResult } from '../helpers/cli.js';
import { pgSchemas, PG_URL } from '../helpers/pg.js';
import { runInPty, SGR } from '../helpers/pty.js';
import { watchedProject as project } from '../helpers/watched-project.js';

// `watch` on a real terminal (pty) and ended by a signal, with the run it watches as a CLI
// process. Through a pipe, and its usage errors: test/cli/watch.test.ts, in-process.

const freshPg = pgSchemas('watch');

function startRun(p: ReturnType<typeof project>, db: string, env: NodeJS.ProcessEnv) {
  return startCli(['run', 'src', '--db', db, '--batch', 'nightly', '--handler', p.handlerFile, '--retries', '0', '-j', '2'], { cwd: p.dir, env });
}

const stores: [string, (dir: string) => string][] = [
  ['SQLite', (dir) => join(dir, 'store.db')],
  ['PostgreSQL', () => freshPg().db],
];

describe.each(stores)('watch on %s', (name, dbFor) => {
  const skip = name === 'PostgreSQL' && !PG_URL;

  it.skipIf(skip)('on a terminal: a live frame with the running tasks and their worker, ending by itself', async () => {
    const p = project(20);
    const db = dbFor(p.dir);
    const run = startRun(p, db, { SLEEP_MS: '300', FAIL_SOME: '1' });
    const w = await runInPty(['watch', '--db', db, '--batch', 'nightly', '--interval', '200ms'], { cwd: p.dir });
    expect(w.code, w.output).toBe(1);
    expect(w.output).toMatch(SGR);
    // A running task's line: worker id, host, elapsed time, key.
    expect(w.output).toMatch(/running \([1-9]\d*\)[^]*\n {2}\S+\.w\d+ +\S+ +[\d.:]+s? +f\d{3}\.log/);
    expect(w.output).toMatch(/latest failures[^]*f\d\d[05]\.log #1 .*FAILED.*: bad input in f\d\d[05]\.log\\x1b\[31m/);
    expect(w.output).toMatch(/20\/20 done/);
    expect(w.output.endsWith('\x1b[?25h')).toBe(true); // the cursor is given back
    expect((await run.result).code).toBe(1);
  });

  it.skipIf(skip).each([
    ['q', 'q'],
    ['Ctrl-C', '\x03'],
  ])('on a terminal: %s ends it (exit 0) while the batch runs on', async (_key, text) => {
    const p = project(20);
    const db = dbFor(p.dir);
    const run = startRun(p, db, { SLEEP_MS: '1500' });
    const w = await runInPty(['watch', '--db', db, '--batch', 'nightly', '--interval', '200ms'], {
      cwd: p.dir,
      type: { when: (out) => /running \([1-9]/.test(out), text },
    });
    expect(w.code, w.output).toBe(0);
    expect(w.output).toMatch(/q or Ctrl-C quits/);
    expect(w.output.endsWith('\x1b[?25h')).toBe(true);
    expect(run.exitCode).toBe(null); // still running: watching never stopped it
    run.kill('SIGINT');
    const r: CliResult = await run.result;
    expect(r.code).toBe(130);
  });
});

describe('watch, more', () => {
  it('a --batch not created yet is waited for, saying so once; SIGINT ends the wait with 0', async () => {
    const p = project(3);
    const watch = startCli(['watch', '--batch', 'later'], { cwd: p.dir });
    let stderr = '';
    watch.stderr!.on('data', (b) => (stderr += b));
    await waitFor(() => /waiting for batch "later"/.test(stderr), 10_000, 'the waiting note');
    watch.kill('SIGINT');
    const w = await watch.result;
    expect(w.code, w.stderr).toBe(0);
    expect(w.stdout).toBe('');
  });
});
