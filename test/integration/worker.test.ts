import { describe, expect, it } from 'vitest';
import { handler, runCli, startCli, waitFor } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query, sideEffects } from '../helpers/store.js';

describe('splitdance worker', () => {
  it('joins the unfinished batches with their stored handlers; two workers together run each task once', async () => {
    const p = projectWithFiles(40);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '10' };
    // Enqueue two batches and stop at once: the store holds the work and the handlers.
    for (const b of ['one', 'two']) {
      const r = await runCli(['run', 'src', '--batch', b, '--handler', handler('record'), '--max-runtime', '1ms', '-j', '1'], { cwd: p.dir, env });
      expect(r.code, r.stderr).toBe(3);
    }
    const [a, b] = await Promise.all([0, 1].map(() => startCli(['worker', '-j', '2', '--quiet'], { cwd: p.dir, env }).result));
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const rows = query<{ name: string; status: string; n: number }>(
      dbPathIn(p.dir),
      'SELECT b.name, t.status, count(*) AS n FROM tasks t JOIN batches b ON b.id = t.batch_id GROUP BY b.name, t.status',
    );
    expect(rows).toEqual([
      { name: 'one', status: 'SUCCESS', n: 40 },
      { name: 'two', status: 'SUCCESS', n: 40 },
    ]);
    const effects = sideEffects(p.log);
    expect(effects.length).toBe(80);
    const again = await runCli(['worker'], { cwd: p.dir });
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/no batch in the store has work left/);
  });
});

describe('splitdance worker --follow', () => {
  it('keeps polling and picks up a batch created after it started; SIGTERM ends it cleanly', async () => {
    const p = projectWithFiles(5);
    const env = { SIDE_EFFECT_LOG: p.log };
    // A store must exist before a worker can join it.
    expect((await runCli(['run', 'src', '--batch', 'first', '--handler', handler('record')], { cwd: p.dir, env })).code).toBe(0);
    const follower = startCli(['worker', '--follow', '-j', '1'], { cwd: p.dir, env, timeoutMs: 100_000 });
    const late = await runCli(['run', 'src', '--batch', 'late', '--handler', handler('record'), '--max-runtime', '1ms', '-j', '1'], { cwd: p.dir, env });
    expect(late.code).toBe(3);
    await waitFor(
      () => query<{ n: number }>(dbPathIn(p.dir), "SELECT count(*) AS n FROM tasks t JOIN batches b ON b.id = t.batch_id WHERE b.name = 'late' AND t.status = 'SUCCESS'")[0]!.n === 5,
      60_000,
      'the follower to finish the late batch',
    );
    follower.kill('SIGTERM');
    const r = await follower.result;
    expect(r.code, r.stderr).toBe(143);
  }, 120_000);
});

describe('splitdance worker --batch B before B exists', () => {
  it('waits for the batch, saying so, then works on it with the run that created it', async () => {
    const p = projectWithFiles(20);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '20' };
    // No store and no batch yet: the worker must wait, not exit.
    const early = startCli(['worker', '--batch', 'later', '-j', '1'], { cwd: p.dir, env, timeoutMs: 60_000 });
    let said = '';
    early.stderr!.on('data', (b) => (said += b));
    await waitFor(() => /waiting for batch "later"/.test(said), 15_000, 'the worker to say it waits');
    expect(early.exitCode).toBeNull();
    const run = await runCli(['run', 'src', '--batch', 'later', '--handler', handler('record'), '-j', '1'], { cwd: p.dir, env });
    expect(run.code, run.stderr).toBe(0);
    const r = await early.result;
    expect(r.code, r.stderr).toBe(0);
    expect(query<{ n: number }>(dbPathIn(p.dir), "SELECT count(*) AS n FROM tasks WHERE status = 'SUCCESS'")[0]!.n).toBe(20);
    expect(new Set(sideEffects(p.log).map((e) => e.key)).size).toBe(20);
  }, 90_000);
});
