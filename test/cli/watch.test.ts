import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler } from '../helpers/cli.js';
import { mainIn, startIn, withProcessEnv } from '../helpers/in-process-cli.js';
import { pgSchemas, PG_URL } from '../helpers/pg.js';
import { projectWithFiles, writeFiles } from '../helpers/project.js';
import { CONTROL } from '../helpers/pty.js';
import { watchedProject as project } from '../helpers/watched-project.js';

// `watch` through a pipe, called in-process beside the run it watches (watch holds no lease, so
// both share this process). On a terminal and ended by a signal: test/e2e/watch.test.ts.

const freshPg = pgSchemas('watchin');

/** The run, in-process; its worker processes read SLEEP_MS and FAIL_SOME from this process's environment. */
function startRun(p: ReturnType<typeof project>, db: string, env: Record<string, string>) {
  return withProcessEnv(env, () => mainIn(p.dir, ['run', 'src', '--db', db, '--batch', 'nightly', '--handler', p.handlerFile, '--retries', '0', '-j', '2']));
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
    const watch = startIn(p.dir, ['watch', '--db', db, '--batch', 'nightly', '--interval', '200ms']);
    const run = startRun(p, db, { SLEEP_MS: '250', FAIL_SOME: '1' });
    const [w, r] = await Promise.all([watch.done, run]);
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
    const w = await mainIn(p.dir, ['watch', '--db', db, '--batch', 'nightly', '--interval', '300ms']);
    expect(w.code, w.stderr).toBe(0);
    expect(w.stdout.trim().split('\n').at(-1)).toMatch(/12\/12 done, 12 succeeded, 0 failed/);
    expect((await run).code).toBe(0);
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
    const run = withProcessEnv(env, () => mainIn(p.dir, ['run', '--job', 'pipeline.json', '--batch', 'nightly', '-j', '2']));
    const w = await mainIn(p.dir, ['status', '--watch', '--batch', 'nightly', '--interval', '100ms']);
    expect(w.code, w.stderr).toBe(1);
    expect(w.stdout.trim().split('\n').at(-1)).toMatch(/6\/6 done, 5 succeeded, 1 failed, .* \[transcode 3\/3 thumbnail 3\/3\]; .*, done$/);
    expect((await run).code).toBe(1);
  });

  it('refuses an interval of 0 and --json (exit 2); a store that is missing is an error as for status (4)', async () => {
    const p = project(3);
    const zero = await mainIn(p.dir, ['watch', '--interval', '0s']);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toMatch(/--interval expects a duration above 0/);
    const json = await mainIn(p.dir, ['watch', '--json']);
    expect(json.code).toBe(2);
    expect(json.stderr).toMatch(/watch has no --json/);
    const missing = await mainIn(p.dir, ['watch', '--db', join(p.dir, 'missing.db')]);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toMatch(/no store at .*missing\.db/);
  });
});
