import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { handler } from '../helpers/cli.js';
import { mainIn, setProcessEnv } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { countBy, sideEffects } from '../helpers/store.js';

let restoreEnv = () => {};
afterEach(() => restoreEnv());

async function status(dir: string) {
  const r = await mainIn(dir, ['status', '--json']);
  const s = JSON.parse(r.stdout);
  expect(r.code).toBe(!s.done ? 3 : s.failed + s.cancelled > 0 ? 1 : 0); // the batch's verdict
  return s;
}

describe('run on a directory', () => {
  it('runs each of 200 files exactly once, a re-run runs nothing, new files run incrementally', async () => {
    const p = projectWithFiles(200);
    restoreEnv = setProcessEnv({ SIDE_EFFECT_LOG: p.log }); // read by the handler, in the workers
    const first = await mainIn(p.dir, ['run', 'src', '--handler', handler('record'), '-j', '2']);
    expect(first.code, first.stderr).toBe(0);
    let effects = sideEffects(p.log);
    expect(effects).toHaveLength(200);
    expect([...countBy(effects, (e) => e.key).values()].every((n) => n === 1)).toBe(true);
    expect(new Set(effects.map((e) => e.key))).toEqual(new Set(p.keys));
    let s = await status(p.dir);
    expect(s).toMatchObject({ total: 200, succeeded: 200, pending: 0, retrying: 0, running: 0, failed: 0, cancelled: 0, done: true });
    expect(s.source).toBe(p.src);

    const second = await mainIn(p.dir, ['run', 'src']);
    expect(second.code, second.stderr).toBe(0);
    expect(sideEffects(p.log)).toHaveLength(200);
    expect(second.stderr).toContain('0 new');

    for (const name of ['new-a.log', 'new-b.log']) writeFileSync(join(p.src, name), 'fresh\n');
    const third = await mainIn(p.dir, ['run', 'src']);
    expect(third.code, third.stderr).toBe(0);
    effects = sideEffects(p.log);
    expect(effects).toHaveLength(202);
    expect(effects.slice(200).map((e) => e.key).sort()).toEqual(['new-a.log', 'new-b.log']);
    s = await status(p.dir);
    expect(s).toMatchObject({ total: 202, succeeded: 202, done: true });
    expect(s.pending + s.retrying + s.running + s.succeeded + s.failed + s.cancelled).toBe(s.total);

    // One attempt each, every one a success.
    const tasks = JSON.parse((await mainIn(p.dir, ['tasks', '--json'])).stdout) as { status: string; attempts: number }[];
    expect(tasks).toHaveLength(202);
    expect(tasks.filter((t) => t.status === 'SUCCESS' && t.attempts === 1)).toHaveLength(202);
    const shown = JSON.parse((await mainIn(p.dir, ['show', 'f000.log', '--json'])).stdout) as { result: unknown; attempts: { outcome: string }[] };
    expect(shown.result).toEqual({ attempt: 1 });
    expect(shown.attempts.map((a) => a.outcome)).toEqual(['SUCCESS']);
  });

  it('status --json tells the truth part-way: pending and retrying are disjoint', async () => {
    const p = projectWithFiles(6);
    // Even-numbered files fail once and come back later (a long backoff); --no-wait leaves them.
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'case {key} in *[02468].log) exit 1;; esac', '--retry-quiet', '--backoff', '1h', '--no-wait', '-j', '2']);
    expect(r.code, r.stderr).toBe(3);
    const s = await status(p.dir);
    expect(s).toMatchObject({ total: 6, succeeded: 3, retrying: 3, pending: 0, running: 0, failed: 0, done: false });
    expect(Date.parse(s.nextRetryAt)).toBeGreaterThan(Date.now() + 50 * 60_000);
    const tasks = JSON.parse((await mainIn(p.dir, ['tasks', '--json', '--status', 'retrying'])).stdout);
    expect(tasks.map((t: { key: string }) => t.key)).toEqual(['f000.log', 'f002.log', 'f004.log']);
    expect(tasks[0]).toMatchObject({ status: 'PENDING', attempts: 1, lastError: 'exit code 1' });
    expect(tasks[0].nextRunAt).toMatch(/^\d{4}-\d\d-\d\dT/);
  });
});
