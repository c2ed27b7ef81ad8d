import { describe, expect, it } from 'vitest';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query, runningCount } from '../helpers/store.js';

describe('pause, resume and cancel', () => {
  it('pause stops claiming (running attempts finish, exit 3); a paused batch is left alone until resumed', async () => {
    const p = projectWithFiles(30);
    const db = dbPathIn(p.dir);
    const child = startCli(['run', 'src', '--exec', 'sleep 0.3', '-j', '2'], { cwd: p.dir });
    await waitFor(() => runningCount(db) >= 2, 20_000, 'two running attempts');
    const paused = await runCli(['pause'], { cwd: p.dir });
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stderr).toMatch(/paused: running attempts finish/);
    const r = await child.result;
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/paused \(`splitdance resume --batch src-[0-9a-f]+` to continue\)/);
    expect(runningCount(db)).toBe(0);
    // Attempts queued behind the running ones were given back unstarted, not counted.
    for (const a of query<{ error: string }>(db, "SELECT error FROM attempts WHERE outcome != 'SUCCESS'")) {
      expect(a.error).toBe('INTERRUPTED: taken back unstarted as the run stopped; not counted');
    }
    const attempts = () => query<{ n: number }>(db, "SELECT count(*) AS n FROM attempts WHERE outcome = 'SUCCESS'")[0]!.n;
    const before = attempts();
    expect(before).toBeLessThan(30);

    const whilePaused = await runCli(['run', 'src'], { cwd: p.dir });
    expect(whilePaused.code).toBe(3);
    expect(attempts()).toBe(before); // nothing was claimed
    const worker = await runCli(['worker'], { cwd: p.dir });
    expect(worker.stderr).toMatch(/no batch in the store has work left/); // paused batches are skipped

    expect((await runCli(['resume'], { cwd: p.dir })).code).toBe(0);
    const finished = await runCli(['run', 'src'], { cwd: p.dir });
    expect(finished.code, finished.stderr).toBe(0);
    expect(query(db, "SELECT 1 FROM tasks WHERE status != 'SUCCESS'")).toEqual([]);
    expect(attempts()).toBe(30);
  });

  it('pause racing the end of a run: the last attempts finish after the pause, the batch is done, and the run exits 0 as done', async () => {
    // Issue 16 item 8: it exited 3 "paused" with every task SUCCESS (and `status` saying done: true).
    const p = projectWithFiles(2);
    const db = dbPathIn(p.dir);
    const child = startCli(['run', 'src', '--exec', 'sleep 1', '-j', '2', '--json'], { cwd: p.dir });
    await waitFor(() => runningCount(db) === 2, 20_000, 'both tasks running');
    expect((await runCli(['pause'], { cwd: p.dir })).code).toBe(0);
    const r = await child.result;
    expect(query(db, "SELECT 1 FROM tasks WHERE status != 'SUCCESS'")).toEqual([]);
    expect(r.code, r.stderr).toBe(0);
    const end = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { event: string; exitCode: number; reason: string };
    expect(end).toMatchObject({ event: 'end', exitCode: 0, reason: 'done' });
    // A done batch that is still paused exits as done too.
    const again = await runCli(['run', 'src'], { cwd: p.dir });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/^done: 2 succeeded/m);
  });

  it('cancel from another process: pending tasks end CANCELLED at once, running ones finish and are not retried; exit 1', async () => {
    const p = projectWithFiles(20);
    const db = dbPathIn(p.dir);
    // Every attempt fails after a while, with retries left: without cancel each would run 4 times.
    const child = startCli(['run', 'src', '--exec', 'sleep 1.5; exit 1', '--retry-quiet', '-j', '2', '--retries', '3', '--backoff', '10ms'], { cwd: p.dir });
    await waitFor(() => runningCount(db) >= 2, 20_000, 'two running attempts');
    const cancel = await runCli(['cancel'], { cwd: p.dir });
    expect(cancel.code, cancel.stderr).toBe(0);
    // 2 running, unless one ended meanwhile (its retry then waits, so is pending); each runs 1.5 s.
    const [, pending, running] = cancel.stderr.match(/: (\d+) pending tasks cancelled, (\d) running \(they finish; unless they succeed they end CANCELLED\)/)!.map(Number);
    expect(pending! + running!).toBe(20);
    expect(running).toBeGreaterThanOrEqual(1);
    // Nothing is claimable once cancel committed: every attempt the batch will ever have exists now.
    const attempts = () => query<{ n: number }>(db, 'SELECT count(*) AS n FROM attempts')[0]!.n;
    const atCancel = attempts();
    const r = await child.result;
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/0 succeeded, 0 failed, 20 cancelled of 20/);
    expect(attempts()).toBe(atCancel);
    const rows = query<{ status: string; last_error: string }>(db, 'SELECT status, last_error FROM tasks ORDER BY id');
    expect(rows.every((t) => t.status === 'CANCELLED')).toBe(true);
    // Those running at the cancel finished (exit 1) and were not retried.
    expect(rows.filter((t) => /^cancelled; its last attempt: exit code 1/.test(t.last_error))).toHaveLength(running!);
    expect(rows.filter((t) => t.last_error === 'cancelled')).toHaveLength(pending!);
    expect(runningCount(db)).toBe(0);

    const again = await runCli(['run', 'src'], { cwd: p.dir });
    expect(again.code).toBe(1); // nothing left to run; the batch ended with cancelled tasks
    expect(attempts()).toBe(atCancel);
  });

  it('cancel --key only touches matching keys; --json reports the counts', async () => {
    const p = projectWithFiles(6);
    // -j 1 and a 1 ms window: at most f000 runs before the batch stops.
    expect((await runCli(['run', 'src', '--exec', 'true', '--max-runtime', '1ms', '-j', '1'], { cwd: p.dir })).code).toBe(3);
    const r = await runCli(['cancel', '--key', 'f00[3-5].log', '--json'], { cwd: p.dir });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ cancelled: 3, stopping: 0, dependents: 0 });
    const done = await runCli(['run', 'src'], { cwd: p.dir });
    expect(done.code).toBe(1);
    const db = dbPathIn(p.dir);
    expect(query(db, "SELECT task_key FROM tasks WHERE status = 'SUCCESS' ORDER BY task_key").map((t) => (t as { task_key: string }).task_key)).toEqual([
      'f000.log',
      'f001.log',
      'f002.log',
    ]);
  });
});
