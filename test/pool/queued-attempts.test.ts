import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, startCli, tempDir, waitFor } from '../helpers/cli.js';
import { dbPathIn, query } from '../helpers/store.js';

/**
 * Attempts queued on a worker behind a running one (short handlers get several at once):
 * what happens to them when the worker dies or the run is interrupted. They never started,
 * so they are INTERRUPTED and not counted; nothing is lost and nothing runs twice at once.
 */
function project(lines: number): { dir: string; pidFile: string; env: NodeJS.ProcessEnv } {
  const dir = tempDir('sd-queued-');
  writeFileSync(join(dir, 'items.txt'), Array.from({ length: lines }, (_, i) => `item ${i}\n`).join(''));
  const pidFile = join(dir, 'stalled.pid');
  return { dir, pidFile, env: { STALL_KEY: 'items.txt:00600', STALL_PID_FILE: pidFile } };
}

const outcomes = (db: string) =>
  Object.fromEntries(query<{ outcome: string; n: number }>(db, 'SELECT outcome, count(*) AS n FROM attempts GROUP BY outcome').map((r) => [r.outcome, r.n]));

describe('attempts queued on a worker', () => {
  it('attempts queued behind a slow one are taken back for the idle worker; its death then costs one CRASHED attempt', async () => {
    const p = project(2000);
    const args = ['run', 'items.txt', '--lines', '1', '--handler', handler('stall'), '-j', '2', '--retries', '0'];
    const child = startCli(args, { cwd: p.dir, env: p.env });
    await waitFor(() => existsSync(p.pidFile), 30_000, 'the stalling task to start');
    const db = dbPathIn(p.dir);
    // Everything else finishes while it hangs: what was queued behind it went to the other worker.
    const succeeded = () => query<{ n: number }>(db, "SELECT count(*) AS n FROM tasks WHERE status = 'SUCCESS'")[0]!.n;
    await waitFor(() => succeeded() === 1999, 20_000, 'every other task to succeed');
    process.kill(Number(readFileSync(p.pidFile, 'utf8')), 'SIGKILL');
    const r = await child.result;
    expect(r.code, r.stderr).toBe(1); // --retries 0: the stalled task's one attempt is charged
    expect(r.stderr).toMatch(/FAILED items\.txt:00600 after 1 attempt: CRASHED: worker killed by SIGKILL/);
    const o = outcomes(db);
    expect(o).toMatchObject({ CRASHED: 1, SUCCESS: 1999 });
    expect(Object.keys(o).filter((k) => !['CRASHED', 'SUCCESS', 'INTERRUPTED'].includes(k))).toEqual([]);
    const interrupted = query<{ error: string; status: string; attempts: number }>(
      db,
      "SELECT a.error, t.status, t.attempts FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.outcome = 'INTERRUPTED'",
    );
    for (const a of interrupted) {
      expect(a.error).toMatch(/^INTERRUPTED: taken back unstarted from a worker busy with a slow attempt; not counted/);
      expect(a).toMatchObject({ status: 'SUCCESS', attempts: 1 }); // --retries 0, and it ran: the queued claim was not charged
    }
  }, 60_000);

  it('SIGINT with attempts queued: they are taken back unstarted, the stuck one is killed after the grace; a rerun finishes', async () => {
    const p = project(2000);
    const args = ['run', 'items.txt', '--lines', '1', '--handler', handler('stall'), '-j', '2', '--grace', '200ms'];
    const child = startCli(args, { cwd: p.dir, env: p.env });
    await waitFor(() => existsSync(p.pidFile), 30_000, 'the stalling task to start');
    child.kill('SIGINT');
    const r = await child.result;
    expect(r.code, r.stderr).toBe(130);
    const db = dbPathIn(p.dir);
    expect(query(db, "SELECT 1 FROM tasks WHERE status = 'RUNNING'")).toEqual([]);
    const o = outcomes(db);
    expect(o.CRASHED ?? 0).toBe(0);
    expect(Object.keys(o).sort()).toEqual(['INTERRUPTED', 'SUCCESS']);
    expect(query(db, "SELECT count(*) AS n FROM tasks WHERE attempts > 0 AND status = 'PENDING'")).toEqual([{ n: 0 }]); // none charged

    const again = await runCli([...args.slice(0, 2), '--lines', '1'], { cwd: p.dir, env: { ...p.env, STALL_KEY: 'none' } });
    expect(again.code, again.stderr).toBe(0);
    expect(query(db, "SELECT count(*) AS n FROM tasks WHERE status = 'SUCCESS'")).toEqual([{ n: 2000 }]);
  }, 60_000);

  it('an attempt that waited queued is recorded from when it ran: one worker\'s attempts never overlap', async () => {
    const p = project(400);
    const r = await runCli(['run', 'items.txt', '--lines', '1', '--handler', handler('stall'), '-j', '1'], { cwd: p.dir, env: { STALL_KEY: 'none' } });
    expect(r.code, r.stderr).toBe(0);
    const rows = query<{ s: number; e: number; claimed: number }>(
      dbPathIn(p.dir),
      'SELECT a.started_at AS s, a.ended_at AS e, t.started_at AS claimed FROM attempts a JOIN tasks t ON t.id = a.task_id ORDER BY a.id',
    );
    expect(rows).toHaveLength(400);
    for (let i = 1; i < rows.length; i++) expect(rows[i]!.s, `attempt ${i + 1}`).toBeGreaterThanOrEqual(rows[i - 1]!.e);
    expect(rows.every((a) => a.s >= a.claimed)).toBe(true);
  });

  it('a handler that ends its worker amid fast queued attempts: that attempt is CRASHED, no other is blamed', async () => {
    const p = project(600);
    const args = ['run', 'items.txt', '--lines', '1', '--handler', handler('stall'), '-j', '1', '--retries', '0'];
    const r = await runCli(args, { cwd: p.dir, env: { STALL_KEY: 'none', CRASH_KEY: 'items.txt:00400' } });
    expect(r.code, r.stderr).toBe(1);
    const db = dbPathIn(p.dir);
    expect(query(db, "SELECT task_key, status FROM tasks WHERE status != 'SUCCESS'")).toEqual([{ task_key: 'items.txt:00400', status: 'FAILED' }]);
    expect(query(db, "SELECT t.task_key FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.outcome = 'CRASHED'")).toEqual([
      { task_key: 'items.txt:00400' },
    ]);
    // Whatever was queued behind it never started: not counted, run again, once.
    for (const t of query<{ attempts: number; n: number }>(db, "SELECT t.attempts, count(a.id) AS n FROM tasks t JOIN attempts a ON a.task_id = t.id WHERE t.status = 'SUCCESS' GROUP BY t.id")) {
      expect(t.attempts).toBe(1);
    }
  });
});
