import { afterEach, describe, expect, it } from 'vitest';
import { poolOptionsOf, startPool, type PoolLimits } from '../../src/run/batch-pool.js';
import type { WorkerPool } from '../../src/pool/pool.js';

// --print and --results need a command's stdout and stderr apart, which only Node's own spawn
// gives (the spawner helper writes both to one file): the launcher is an option carried to the
// pool and its workers, never process.env written at run time (test/worker/print.test.ts
// shows the output; here, that nothing of it is left in the process that ran the command).

const limits: PoolLimits = { concurrency: 1, maxTasksPerWorker: null, maxWorkerMemory: null, loadTimeoutMs: 30_000 };
const exec = { '': { kind: 'exec' as const, template: 'true' } };
const pools: WorkerPool[] = [];

afterEach(async () => {
  for (const p of pools.splice(0)) await p.shutdown();
});

describe('the launcher a run needs', () => {
  it.each([
    { flags: {}, nodeSpawn: false },
    { flags: { print: { tag: false, keepOrder: false, lineBuffer: false } }, nodeSpawn: true },
    { flags: { results: '/tmp/results' }, nodeSpawn: true },
    { flags: { print: null, results: null }, nodeSpawn: false },
  ])('$flags: Node spawn $nodeSpawn', ({ flags, nodeSpawn }) => {
    expect(poolOptionsOf({ ...limits, ...flags }, exec, process.cwd()).nodeSpawn).toBe(nodeSpawn);
  });

  it('a pool started for --print leaves process.env as it was', async () => {
    const before = process.env.SPLITDANCE_SPAWNER;
    pools.push(await startPool({ ...limits, print: { tag: false, keepOrder: false, lineBuffer: false } }, exec, process.cwd()));
    expect(process.env.SPLITDANCE_SPAWNER).toBe(before);
  });
});
