import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startCli, type CliResult } from '../helpers/cli.js';
import { pgSchemas, PG_URL } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';
import { CONTROL, runInPty, SGR } from '../helpers/pty.js';

const freshPg = pgSchemas('watch');

/**
 * A project whose handler takes $SLEEP_MS and fails the keys ending in 0 or 5 (with an escape
 * sequence in the error, which nothing may print raw), run by another process.
 */
function project(n: number) {
  const p = projectWithFiles(n);
  const handlerFile = join(p.dir, 'h.mjs');
  writeFileSync(
    handlerFile,
    `export default async (task) => {
      await new Promise((r) => setTimeout(r, Number(process.env.SLEEP_MS)));
      if (process.env.FAIL_SOME && /[05]\\.log$/.test(task.key)) throw new Error('bad input in ' + task.key + '\\x1b[31m');
      return {};
    };\n`,
  );
  return { ...p, handlerFile };
}

function startRun(p: ReturnType<typeof project>, db: string, env: NodeJS.ProcessEnv) {
  return startCli(['run', 'src', '--db', db, '--batch', 'nightly', '--handler', p.handlerFile, '--retries', '0', '-j', '2'], { cwd: p.dir, env });
}

const stores: [string, (dir: string) => string][] = [
  ['SQLite', (dir) => join(dir, 'store.db')],
  ['PostgreSQL', () => freshPg().db],
];

describe.each(stores)('watch on %s', (name, dbFor) => {
  const skip = name === 'PostgreSQL' && !PG_URL;

  it.skipIf(skip)('through a pipe: plain lines, no control characters, ends with the run, exit 1 when some failed', async () => {
    const p = project(20);
    const db = dbFor(p.dir);
    // Started first: it waits for the batch the run creates.
    const watch = startCli(['watch', '--db', db, '--batch', 'nightly', '--interval', '200ms'], { cwd: p.dir });
    const run = startRun(p, db, { SLEEP_MS: '250', FAIL_SOME: '1' });
    const [w, r] = await Promise.all([watch.result, run.result]);
    expect(r.code, r.stderr).toBe(1);
    expect(w.code, w.stderr).toBe(1);
    expect(w.stdout).not.toMatch(CONTROL);
    const lines = w.stdout.trim().split('\n');
    expect(lines.length).toBeGreaterThan(2);
    expect(lines.some((l) => /, [1-9]\d* running/.test(l))).toBe(true);
    expect(lines.at(-1)).toMatch(/batch nightly: 20\/20 done, 16 succeeded, 4 failed, 0 cancelled, 0 pending, 0 retrying, 0 running; .*, done$/);
  });

  it.skipIf(skip)('through a pipe: exit 0 when every task succeeded', async () => {
    const p = project(12);
    const db = dbFor(p.dir);
    const run = startRun(p, db, { SLEEP_MS: '200' });
    const w = await startCli(['watch', '--db', db, '--batch', 'nightly', '--interval', '300ms'], { cwd: p.dir }).result;
    expect(w.code, w.stderr).toBe(0);
    expect(w.stdout.trim().split('\n').at(-1)).toMatch(/12\/12 done, 12 succeeded, 0 failed/);
    expect((await run.result).code).toBe(0);
  });

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
