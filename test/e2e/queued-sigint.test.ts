import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, startCli, tempDir, waitFor } from '../helpers/cli.js';
import { allAttempts, statusCounts } from '../helpers/json-views.js';

/**
 * SIGINT to a run with attempts queued on its workers behind a stuck one: they never started,
 * so they go back INTERRUPTED and uncharged (the rest of this story: test/pool/queued-attempts.test.ts).
 */
describe('attempts queued on a worker', () => {
  it('SIGINT with attempts queued: they are taken back unstarted, the stuck one is killed after the grace; a rerun finishes', async () => {
    const dir = tempDir('sd-queued-');
    writeFileSync(join(dir, 'items.txt'), Array.from({ length: 2000 }, (_, i) => `item ${i}\n`).join(''));
    const pidFile = join(dir, 'stalled.pid');
    const env = { STALL_KEY: 'items.txt:00600', STALL_PID_FILE: pidFile };
    const args = ['run', 'items.txt', '--lines', '1', '--handler', handler('stall'), '-j', '2', '--grace', '200ms'];
    const child = startCli(args, { cwd: dir, env });
    await waitFor(() => existsSync(pidFile), 30_000, 'the stalling task to start');
    child.kill('SIGINT');
    const r = await child.result;
    expect(r.code, r.stderr).toBe(130);
    expect((await statusCounts(dir)).RUNNING).toBeUndefined();
    const attempts = await allAttempts(dir);
    const outcomes = new Set(attempts.map((a) => a.outcome));
    expect(outcomes.has('CRASHED')).toBe(false);
    expect([...outcomes].sort()).toEqual(['INTERRUPTED', 'SUCCESS']);
    const tasks = attempts.map((a) => a.task);
    expect(tasks.filter((t) => t.attempts > 0 && t.status === 'PENDING')).toEqual([]); // none charged

    const again = await runCli([...args.slice(0, 2), '--lines', '1'], { cwd: dir, env: { ...env, STALL_KEY: 'none' } });
    expect(again.code, again.stderr).toBe(0);
    expect(await statusCounts(dir)).toEqual({ SUCCESS: 2000 });
  }, 60_000);
});
