import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, tempDir, waitFor } from '../helpers/cli.js';
import { mainIn, startIn, withProcessEnv } from '../helpers/in-process-cli.js';
import { allAttempts, statusCounts, statusJson, tasksJson, waitUntil } from '../helpers/json-views.js';

/**
 * Attempts queued on a worker behind a running one (short handlers get several at once):
 * what happens to them when the worker dies. They never started, so they are INTERRUPTED and
 * not counted; nothing is lost and nothing runs twice at once. (SIGINT to the run: test/e2e/queued-sigint.test.ts.)
 * The stall handler reads STALL_KEY, STALL_PID_FILE and CRASH_KEY in the worker processes,
 * which inherit this process's environment.
 */
function project(lines: number): { dir: string; pidFile: string; env: Record<string, string> } {
  const dir = tempDir('sd-queued-');
  writeFileSync(join(dir, 'items.txt'), Array.from({ length: lines }, (_, i) => `item ${i}\n`).join(''));
  const pidFile = join(dir, 'stalled.pid');
  return { dir, pidFile, env: { STALL_KEY: 'items.txt:00600', STALL_PID_FILE: pidFile } };
}

const outcomes = async (dir: string) => {
  const counts: Record<string, number> = {};
  for (const a of await allAttempts(dir)) counts[a.outcome ?? 'null'] = (counts[a.outcome ?? 'null'] ?? 0) + 1;
  return counts;
};

describe('attempts queued on a worker', () => {
  it('attempts queued behind a slow one are taken back for the idle worker; its death then costs one CRASHED attempt', async () => {
    const p = project(2000);
    await withProcessEnv(p.env, async () => {
      const args = ['run', 'items.txt', '--lines', '1', '--handler', handler('stall'), '-j', '2', '--retries', '0'];
      const child = startIn(p.dir, args);
      await waitFor(() => existsSync(p.pidFile), 30_000, 'the stalling task to start');
      // Everything else finishes while it hangs: what was queued behind it went to the other worker.
      await waitUntil(async () => (await statusJson(p.dir)).succeeded === 1999, 20_000, 'every other task to succeed');
      process.kill(Number(readFileSync(p.pidFile, 'utf8')), 'SIGKILL');
      const r = await child.done;
      expect(r.code, r.stderr).toBe(1); // --retries 0: the stalled task's one attempt is charged
      expect(r.stderr).toMatch(/FAILED items\.txt:00600 after 1 attempt: CRASHED: worker killed by SIGKILL/);
    });
    const o = await outcomes(p.dir);
    expect(o).toMatchObject({ CRASHED: 1, SUCCESS: 1999 });
    expect(Object.keys(o).filter((k) => !['CRASHED', 'SUCCESS', 'INTERRUPTED'].includes(k))).toEqual([]);
    for (const a of (await allAttempts(p.dir)).filter((x) => x.outcome === 'INTERRUPTED')) {
      expect(a.error).toMatch(/^INTERRUPTED: taken back unstarted from a worker busy with a slow attempt; not counted/);
      expect(a.task).toMatchObject({ status: 'SUCCESS', attempts: 1 }); // --retries 0, and it ran: the queued claim was not charged
    }
  }, 60_000);

  it('an attempt that waited queued is recorded from when it ran: one worker\'s attempts never overlap', async () => {
    const p = project(400);
    const r = await withProcessEnv({ STALL_KEY: 'none' }, () => mainIn(p.dir, ['run', 'items.txt', '--lines', '1', '--handler', handler('stall'), '-j', '1']));
    expect(r.code, r.stderr).toBe(0);
    // In creation order (keys are numbered in it), each with its task's claim time.
    const rows = (await allAttempts(p.dir)).map((a) => ({ s: a.startedAt, e: a.endedAt!, claimed: a.task.startedAt! }));
    rows.sort((x, y) => x.s - y.s);
    expect(rows).toHaveLength(400);
    for (let i = 1; i < rows.length; i++) expect(rows[i]!.s, `attempt ${i + 1}`).toBeGreaterThanOrEqual(rows[i - 1]!.e);
    expect(rows.every((a) => a.s >= a.claimed)).toBe(true);
  });

  it('a handler that ends its worker amid fast queued attempts: that attempt is CRASHED, no other is blamed', async () => {
    const p = project(600);
    const args = ['run', 'items.txt', '--lines', '1', '--handler', handler('stall'), '-j', '1', '--retries', '0'];
    const r = await withProcessEnv({ STALL_KEY: 'none', CRASH_KEY: 'items.txt:00400' }, () => mainIn(p.dir, args));
    expect(r.code, r.stderr).toBe(1);
    const attempts = await allAttempts(p.dir);
    expect(await statusCounts(p.dir)).toEqual({ SUCCESS: 599, FAILED: 1 });
    expect((await tasksJson(p.dir, ['--status', 'FAILED'])).map((t) => t.key)).toEqual(['items.txt:00400']);
    expect(attempts.filter((a) => a.outcome === 'CRASHED').map((a) => a.key)).toEqual(['items.txt:00400']);
    // Whatever was queued behind it never started: not counted, run again, once.
    for (const a of attempts.filter((x) => x.task.status === 'SUCCESS')) expect(a.task.attempts).toBe(1);
  });
});
