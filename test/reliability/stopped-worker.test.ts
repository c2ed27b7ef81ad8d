import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, handler, startCli, waitFor } from '../helpers/cli.js';
import { processState, processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { statusCounts } from '../helpers/json-views.js';
import { dbPathIn, logEntries } from '../helpers/store.js';
import { missing } from '../helpers/services.js';
import { checkInvariants } from './invariants.js';

const helperBuilt = !missing('cc', 'the stopped spawner helper test') && existsSync(join(ROOT, 'dist/native/spawner'));

// RELIABILITY R37: a module worker stopped with SIGSTOP while it runs an attempt and holds
// another queued behind it. It answers nothing — not the request to give back its queued
// attempts, not the end of its running one — and this run renews its leases, so without
// --timeout the run would wait for ever. Stopped past a lease, it is taken for dead: killed,
// its attempts go to the other workers, and the side-effect log shows no key twice at once.

const stopped: number[] = [];
afterEach(() => {
  for (const pid of stopped.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  }
});

const state = processState;

describe('a stopped module worker (R37)', () => {
  it('its running and queued attempts go to the other workers: the run ends, each key ran once at a time', async () => {
    const p = projectWithFiles(6);
    const env = { SIDE_EFFECT_LOG: p.log, CANARY_DIR: p.dir, SLEEP_MS: '800', SD_MARK: p.dir };
    const args = ['run', 'src', '--handler', handler('record'), '-j', '2', '--lease', '2s', '--retries', '2', '--backoff', '10ms'];
    const run = startCli(args, { cwd: p.dir, env });
    const pids = () => [...new Set(logEntries(p.log).filter((e) => e.type === 'start').map((e) => (e as { pid: number }).pid))];
    await waitFor(() => pids().length === 2, 20_000, 'both workers running an attempt');
    const victim = pids()[0]!;
    process.kill(victim, 'SIGSTOP');
    stopped.push(victim);

    const r = await run.result;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`worker \\S+ \\(pid ${victim}\\) has been stopped \\(SIGSTOP\\) for over 2s holding \\d attempt\\(s\\); it is killed so they can run elsewhere`));
    expect(await statusCounts(p.dir)).toEqual({ SUCCESS: 6 });
    expect(checkInvariants({ dbPath: dbPathIn(p.dir), keys: p.keys, retries: 2, logPath: p.log, kills: 1, concurrency: 2 })).toEqual([]);
    expect(['gone', 'Z']).toContain(state(victim));
    await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'no worker left behind');
  }, 60_000);

  it.skipIf(!helperBuilt)('an --exec slot whose spawner helper is stopped: its command is killed with it and its attempts run elsewhere', async () => {
    const p = projectWithFiles(6);
    const env = { SIDE_EFFECT_LOG: p.log, CANARY_DIR: p.dir, SLEEP_MS: '800', SD_MARK: p.dir };
    const args = ['run', 'src', '--exec', `node ${handler('record-exec')}`, '-j', '2', '--lease', '2s', '--retries', '2', '--backoff', '10ms'];
    const run = startCli(args, { cwd: p.dir, env });
    await waitFor(() => logEntries(p.log).filter((e) => e.type === 'start').length >= 2, 20_000, 'two commands running');
    const helper = processesWithEnv(p.dir).find((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'spawner')!;
    process.kill(helper, 'SIGSTOP');
    stopped.push(helper);

    const r = await run.result; // the stopped helper, which holds its stderr, is killed by then
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`worker \\S+ \\(pid ${helper}\\) has been stopped \\(SIGSTOP\\)`));
    expect(await statusCounts(p.dir)).toEqual({ SUCCESS: 6 });
    expect(checkInvariants({ dbPath: dbPathIn(p.dir), keys: p.keys, retries: 2, logPath: p.log, kills: 1, concurrency: 2 })).toEqual([]);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'no helper or command left behind');
  }, 60_000);
});
