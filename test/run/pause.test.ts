import { describe, expect, it } from 'vitest';
import { mainIn, startIn } from '../helpers/in-process-cli.js';
import { allAttempts, runningTasks, statusCounts, tasksJson, waitUntil } from '../helpers/json-views.js';
import { projectWithFiles } from '../helpers/project.js';

describe('pause, resume and cancel', () => {
  it('pause stops claiming (running attempts finish, exit 3); a paused batch is left alone until resumed', async () => {
    const p = projectWithFiles(30);
    const child = startIn(p.dir, ['run', 'src', '--exec', 'sleep 0.3', '-j', '2']);
    await waitUntil(async () => (await runningTasks(p.dir)) >= 2, 20_000, 'two running attempts');
    const paused = await mainIn(p.dir, ['pause']);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stderr).toMatch(/paused: running attempts finish/);
    const r = await child.done;
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/paused \(`splitdance resume --batch src-[0-9a-f]+` to continue\)/);
    expect(await runningTasks(p.dir)).toBe(0);
    // Attempts queued behind the running ones were given back unstarted, not counted.
    for (const a of (await allAttempts(p.dir)).filter((x) => x.outcome !== 'SUCCESS')) {
      expect(a.error).toBe('INTERRUPTED: taken back unstarted as the run stopped; not counted');
    }
    const attempts = async () => (await allAttempts(p.dir)).filter((a) => a.outcome === 'SUCCESS').length;
    const before = await attempts();
    expect(before).toBeLessThan(30);

    const whilePaused = await mainIn(p.dir, ['run', 'src']);
    expect(whilePaused.code).toBe(3);
    expect(await attempts()).toBe(before); // nothing was claimed
    const worker = await mainIn(p.dir, ['worker']);
    expect(worker.stderr).toMatch(/no batch in the store has work left/); // paused batches are skipped

    expect((await mainIn(p.dir, ['resume'])).code).toBe(0);
    const finished = await mainIn(p.dir, ['run', 'src']);
    expect(finished.code, finished.stderr).toBe(0);
    expect(await statusCounts(p.dir)).toEqual({ SUCCESS: 30 });
    expect(await attempts()).toBe(30);
  });

  it('pause racing the end of a run: the last attempts finish after the pause, the batch is done, and the run exits 0 as done', async () => {
    // Issue 16 item 8: it exited 3 "paused" with every task SUCCESS (and `status` saying done: true).
    const p = projectWithFiles(2);
    const child = startIn(p.dir, ['run', 'src', '--exec', 'sleep 1', '-j', '2', '--json']);
    await waitUntil(async () => (await runningTasks(p.dir)) === 2, 20_000, 'both tasks running');
    expect((await mainIn(p.dir, ['pause'])).code).toBe(0);
    const r = await child.done;
    expect(await statusCounts(p.dir)).toEqual({ SUCCESS: 2 });
    expect(r.code, r.stderr).toBe(0);
    const end = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { event: string; exitCode: number; reason: string };
    expect(end).toMatchObject({ event: 'end', exitCode: 0, reason: 'done' });
    // A done batch that is still paused exits as done too.
    const again = await mainIn(p.dir, ['run', 'src']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/^done: 2 succeeded/m);
  });

  it('cancel from another process: pending tasks end CANCELLED at once, running ones finish and are not retried; exit 1', async () => {
    const p = projectWithFiles(20);
    // Every attempt fails after a while, with retries left: without cancel each would run 4 times.
    const child = startIn(p.dir, ['run', 'src', '--exec', 'sleep 1.5; exit 1', '--retry-quiet', '-j', '2', '--retries', '3', '--backoff', '10ms']);
    await waitUntil(async () => (await runningTasks(p.dir)) >= 2, 20_000, 'two running attempts');
    const cancel = await mainIn(p.dir, ['cancel']);
    expect(cancel.code, cancel.stderr).toBe(0);
    // 2 running, unless one ended meanwhile (its retry then waits, so is pending); each runs 1.5 s.
    const [, pending, running] = cancel.stderr.match(/: (\d+) pending tasks cancelled, (\d) running \(they finish; unless they succeed they end CANCELLED\)/)!.map(Number);
    expect(pending! + running!).toBe(20);
    expect(running).toBeGreaterThanOrEqual(1);
    // Nothing is claimable once cancel committed: every attempt the batch will ever have exists now.
    const attempts = async () => (await allAttempts(p.dir)).length;
    const atCancel = await attempts();
    const r = await child.done;
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/0 succeeded, 0 failed, 20 cancelled of 20/);
    expect(await attempts()).toBe(atCancel);
    const rows = await tasksJson(p.dir);
    expect(rows.every((t) => t.status === 'CANCELLED')).toBe(true);
    // Those running at the cancel finished (exit 1) and were not retried.
    expect(rows.filter((t) => /^cancelled; its last attempt: exit code 1/.test(t.lastError ?? ''))).toHaveLength(running!);
    expect(rows.filter((t) => t.lastError === 'cancelled')).toHaveLength(pending!);
    expect(await runningTasks(p.dir)).toBe(0);

    const again = await mainIn(p.dir, ['run', 'src']);
    expect(again.code).toBe(1); // nothing left to run; the batch ended with cancelled tasks
    expect(await attempts()).toBe(atCancel);
  });

  it('cancel --key only touches matching keys; --json reports the counts', async () => {
    const p = projectWithFiles(6);
    // -j 1 and a 1 ms window: at most f000 runs before the batch stops.
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--max-runtime', '1ms', '-j', '1'])).code).toBe(3);
    const r = await mainIn(p.dir, ['cancel', '--key', 'f00[3-5].log', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ cancelled: 3, stopping: 0, dependents: 0 });
    const done = await mainIn(p.dir, ['run', 'src']);
    expect(done.code).toBe(1);
    expect((await tasksJson(p.dir, ['--status', 'SUCCESS'])).map((t) => t.key).sort()).toEqual([
      'f000.log',
      'f001.log',
      'f002.log',
    ]);
  });
});
