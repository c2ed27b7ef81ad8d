import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli, tempDir } from '../helpers/cli.js';
import { copyDemo } from '../helpers/project.js';

/** Each task's stored result, as `tasks --json` gives it. */
const resultsOf = (json: string) => (JSON.parse(json) as { result: { lines: number; INFO: number; WARN: number; ERROR: number; out: string } }[]).map((t) => t.result);

describe("the README's first command", () => {
  it('runs the demo job over fixtures/logs end to end with a TypeScript handler', async () => {
    const cwd = tempDir();
    const db = join(cwd, 'store.db');
    copyDemo(cwd);
    const job = 'fixtures/jobs/clean-logs.json'; // as the README types it, in a copy of the repository's fixtures
    const r = await runCli(['run', '--job', job, '--db', db], { cwd });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/done: 7 succeeded, 0 failed of 7/);
    // The declared output, relative to the job file's folder: the repository's demo-output/.
    const cleaned = readFileSync(join(cwd, 'demo-output/cleaned/2025/01/app.log'), 'utf8');
    expect(cleaned).not.toMatch(/user \d+/);
    const results = resultsOf((await runCli(['tasks', '--json', '--db', db], { cwd })).stdout);
    expect(results).toHaveLength(7);
    expect(results.every((x) => x.lines > 0 && x.INFO + x.WARN + x.ERROR === x.lines && x.out.startsWith(join(cwd, 'demo-output/cleaned/')))).toBe(true);
    // A new batch over the same logs (tomorrow's cron run) finds every cleaned file up to date.
    const again = await runCli(['run', '--job', job, '--db', db, '--batch', 'tomorrow'], { cwd });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/done: 7 succeeded \(7 up to date, not run\), 0 failed of 7/);
  });

  it('runs the stages demo: count, then alert and archive per log; alert reads count\'s result', async () => {
    const cwd = tempDir();
    const db = join(cwd, 'store.db');
    const r = await runCli(['run', '--job', join(ROOT, 'fixtures/jobs/log-pipeline.json'), '--db', db], { cwd, env: { SPLITDANCE_DEMO_OUT: join(cwd, 'out') } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/done: 21 succeeded, 0 failed of 21/);
    const counted = JSON.parse((await runCli(['show', 'count/2025/01/app.log', '--json', '--db', db], { cwd })).stdout).result;
    expect(counted.ERROR).toBeGreaterThan(0);
    const logs = await runCli(['logs', 'alert/2025/01/app.log', '--db', db], { cwd });
    expect(logs.stdout.trim()).toBe(`2025/01/app.log: ${counted.ERROR} errors`);
  });
});
