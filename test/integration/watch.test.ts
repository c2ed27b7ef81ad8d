import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, startCli, waitFor, type CliResult } from '../helpers/cli.js';
import { pgSchemas, PG_URL } from '../helpers/pg.js';
import { projectWithFiles, writeFiles } from '../helpers/project.js';
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
    expect(lines.at(-1)).toMatch(/batch nightly: 20\/20 done, 16 succeeded, 4 failed, 0 cancelled, 0 pending, 0 retrying, 0 running, 0 queued; .*, done$/);
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

describe('watch, more', () => {
  it('shows the counts per stage of a staged batch, and status --watch is the same command', async () => {
    const p = projectWithFiles(0);
    writeFiles(p.dir, { 'videos/a.mp4': 'a\n', 'videos/b.mp4': 'b\n', 'videos/c.mp4': 'c\n' });
    const stage = handler('stage');
    const job = { source: 'videos', stages: [{ name: 'transcode', handler: stage }, { name: 'thumbnail', handler: stage, needs: ['transcode'] }] };
    writeFileSync(join(p.dir, 'pipeline.json'), JSON.stringify(job));
    const env = { STAGE_LOG: join(p.dir, 'stages.ndjson'), SLEEP_MS: '150', FAIL_STAGE: 'thumbnail', FAIL_ITEMS: '^b' };
    const run = startCli(['run', '--job', 'pipeline.json', '--batch', 'nightly', '-j', '2'], { cwd: p.dir, env });
    const w = await startCli(['status', '--watch', '--batch', 'nightly', '--interval', '100ms'], { cwd: p.dir }).result;
    expect(w.code, w.stderr).toBe(1);
    expect(w.stdout.trim().split('\n').at(-1)).toMatch(/6\/6 done, 5 succeeded, 1 failed, .* \[transcode 3\/3 thumbnail 3\/3\]; .*, done$/);
    expect((await run.result).code).toBe(1);
  });

  it('refuses an interval of 0 and --json (exit 2); a store that is missing is an error as for status (4)', async () => {
    const p = project(3);
    const zero = await runCli(['watch', '--interval', '0s'], { cwd: p.dir });
    expect(zero.code).toBe(2);
    expect(zero.stderr).toMatch(/--interval expects a duration above 0/);
    const json = await runCli(['watch', '--json'], { cwd: p.dir });
    expect(json.code).toBe(2);
    expect(json.stderr).toMatch(/watch has no --json/);
    const missing = await runCli(['watch', '--db', join(p.dir, 'missing.db')], { cwd: p.dir });
    expect(missing.code).toBe(4);
    expect(missing.stderr).toMatch(/no store at .*missing\.db/);
  });

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
