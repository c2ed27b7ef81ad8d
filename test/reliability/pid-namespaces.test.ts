import { describe, expect, it } from 'vitest';
import { handler, sleep, waitFor } from '../helpers/cli.js';
import { runInNamespace } from '../helpers/namespaces.js';
import { childrenOf } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { statusCounts, tasksJson } from '../helpers/json-views.js';
import { dbPathIn, logEntries, storedAttempts } from '../helpers/store.js';
import { missing } from '../helpers/services.js';
import { checkInvariants } from './invariants.js';

// RELIABILITY R29: two runs on one store from two PID namespaces of one machine (two
// containers with host networking sharing a volume): same hostname, same boot id, pids that
// mean nothing across the boundary. Each must see the other as a remote owner — lease
// expiry only — never as a dead local one, and no key may run twice at once.

const root = !missing('root', 'the PID namespace tests (unshare --pid)');

describe('runs in two PID namespaces of one machine (R29)', () => {
  it.skipIf(!root)('neither takes the other’s tasks while its lease is renewed, and no key runs twice at once', async () => {
    const p = projectWithFiles(8);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '1200', CANARY_DIR: p.dir };
    // A short lease, renewed by heartbeat: each run's recovery looks at the other's tasks many times.
    const args = ['run', 'src', '--handler', handler('record'), '-j', '2', '--lease', '2s', '--retries', '2', '--quiet'];
    const first = runInNamespace(args, p.dir, env);
    await waitFor(() => logEntries(p.log).some((e) => e.type === 'start'), 20_000, 'the first run to start an attempt');
    await sleep(200);
    const second = runInNamespace(args, p.dir, env);
    const [a, b] = await Promise.all([first, second]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);

    const db = dbPathIn(p.dir);
    expect((await storedAttempts(db)).filter((a) => a.outcome !== 'SUCCESS')).toEqual([]);
    expect((await tasksJson(p.dir)).filter((t) => t.attempts !== 1)).toEqual([]);
    expect(checkInvariants({ dbPath: db, keys: p.keys, retries: 2, logPath: p.log, concurrency: 4 })).toEqual([]);
  }, 90_000);

  it.skipIf(!root)('a run whose namespace died (its pid 1 killed, the container gone) is reclaimed by the other once its lease expires', async () => {
    const p = projectWithFiles(4);
    const env = { SIDE_EFFECT_LOG: p.log, CANARY_DIR: p.dir };
    const args = ['run', 'src', '--handler', handler('record'), '-j', '2', '--lease', '2s', '--retries', '2', '--quiet'];
    const first = runInNamespace(args, p.dir, { ...env, SLEEP_MS: '60000' });
    await waitFor(() => logEntries(p.log).filter((e) => e.type === 'start').length === 2, 20_000, 'two attempts to start');
    // Its pid 1 dies: the kernel kills every process of the namespace with it.
    for (const pid of childrenOf(first.child.pid!)) process.kill(pid, 'SIGKILL');
    await first;

    const second = await runInNamespace(args, p.dir, { ...env, SLEEP_MS: '10' });
    expect(second.code, second.stderr).toBe(0);
    const db = dbPathIn(p.dir);
    // Its two running attempts, and any it held queued behind them, come back LOST.
    expect((await storedAttempts(db)).filter((a) => a.outcome === 'LOST').length).toBeGreaterThanOrEqual(2);
    expect(await statusCounts(p.dir)).toEqual({ SUCCESS: 4 });
    expect(checkInvariants({ dbPath: db, keys: p.keys, retries: 2, logPath: p.log, kills: 1, concurrency: 2 })).toEqual([]);
  }, 90_000);
});
