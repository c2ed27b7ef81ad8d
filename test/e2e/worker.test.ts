import { describe, expect, it } from 'vitest';
import { handler, sleep, startCli, waitFor } from '../helpers/cli.js';
import { mainIn, mainInEnv, withProcessEnv } from '../helpers/in-process-cli.js';
import { statusCounts } from '../helpers/json-views.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';
import { sideEffects, storedAttempts } from '../helpers/store.js';

// Workers joining a store: several coordinators at once, so each is a process of its own (one
// process is one lease owner); --follow is ended by SIGTERM. The batches are enqueued and read
// in-process.

/** `splitdance ARGV` in-process, its worker processes given `env` (a fixture handler reads it there). */
const inProcess = (cwd: string, argv: string[], env: Record<string, string>) => withProcessEnv(env, () => mainInEnv(cwd, argv, env));

/** Each batch's name, task count and successes, from `batches --json`. */
async function batchCounts(cwd: string): Promise<{ batch: string; total: number; succeeded: number }[]> {
  const rows = JSON.parse((await mainIn(cwd, ['batches', '--json'])).stdout) as { batch: string; total: number; succeeded: number }[];
  return rows.map(({ batch, total, succeeded }) => ({ batch, total, succeeded })).sort((a, b) => a.batch.localeCompare(b.batch));
}

describe('splitdance worker', () => {
  it('joins the unfinished batches with their stored handlers; two workers together run each task once', async () => {
    const p = projectWithFiles(40);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '10' };
    // Enqueue two batches and stop at once: the store holds the work and the handlers.
    for (const b of ['one', 'two']) {
      const r = await inProcess(p.dir, ['run', 'src', '--batch', b, '--handler', handler('record'), '--max-runtime', '1ms', '-j', '1'], env);
      expect(r.code, r.stderr).toBe(3);
    }
    const [a, b] = await Promise.all([0, 1].map(() => startCli(['worker', '-j', '2', '--quiet'], { cwd: p.dir, env }).result));
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    expect(await batchCounts(p.dir)).toEqual([
      { batch: 'one', total: 40, succeeded: 40 },
      { batch: 'two', total: 40, succeeded: 40 },
    ]);
    const effects = sideEffects(p.log);
    expect(effects.length).toBe(80);
    const again = await mainIn(p.dir, ['worker']);
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/no batch in the store has work left/);
  });
});

describe('splitdance worker --follow', () => {
  it('keeps polling and picks up a batch created after it started; SIGTERM ends it cleanly', async () => {
    const p = projectWithFiles(5);
    const env = { SIDE_EFFECT_LOG: p.log };
    // A store must exist before a worker can join it.
    expect((await inProcess(p.dir, ['run', 'src', '--batch', 'first', '--handler', handler('record')], env)).code).toBe(0);
    const follower = startCli(['worker', '--follow', '-j', '1'], { cwd: p.dir, env, timeoutMs: 100_000 });
    const late = await inProcess(p.dir, ['run', 'src', '--batch', 'late', '--handler', handler('record'), '--max-runtime', '1ms', '-j', '1'], env);
    expect(late.code).toBe(3);
    const lateDone = async () => (await batchCounts(p.dir)).find((b) => b.batch === 'late')?.succeeded === 5;
    for (const end = Date.now() + 60_000; !(await lateDone()); await sleep(100)) {
      if (Date.now() > end) throw new Error('timed out waiting for the follower to finish the late batch');
    }
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
    const run = await inProcess(p.dir, ['run', 'src', '--batch', 'later', '--handler', handler('record'), '-j', '1'], env);
    expect(run.code, run.stderr).toBe(0);
    const r = await early.result;
    expect(r.code, r.stderr).toBe(0);
    expect(await batchCounts(p.dir)).toEqual([{ batch: 'later', total: 20, succeeded: 20 }]);
    expect(new Set(sideEffects(p.log).map((e) => e.key)).size).toBe(20);
  }, 90_000);
});

describe.skipIf(!PG_URL)('splitdance worker --batch B on PostgreSQL before its schema exists', () => {
  const freshDb = pgSchemas('cli');

  it('a worker --batch started before its schema and batch exist waits for them, then shares the batch with run', async () => {
    const { db } = freshDb();
    const p = projectWithFiles(200);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '10' };
    const early = startCli(['worker', '--db', db, '--batch', 'shared', '-j', '2'], { cwd: p.dir, env, timeoutMs: 60_000 });
    let said = '';
    early.stderr!.on('data', (b) => (said += b));
    await waitFor(() => /waiting for batch "shared"/.test(said), 15_000, 'the worker to say it waits');
    const run = await inProcess(p.dir, ['run', 'src', '--db', db, '--batch', 'shared', '--handler', handler('record'), '-j', '2'], env);
    expect(run.code, run.stderr).toBe(0);
    const r = await early.result;
    expect(r.code, r.stderr).toBe(0);
    expect(await statusCounts(p.dir, ['--db', db, '--batch', 'shared'])).toEqual({ SUCCESS: 200 });
    const owners = new Set((await storedAttempts(db, 'shared')).map((a) => a.owner));
    expect(owners.size).toBe(2); // the worker took part
  }, 90_000);
});
