import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, handler, runCli, startCli, waitFor } from '../helpers/cli.js';
import { processState, processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, logEntries } from '../helpers/store.js';
import { missing } from '../helpers/services.js';
import { checkInvariants } from './invariants.js';

const helperBuilt = !missing('cc', 'the stopped spawner helper test') && existsSync(join(ROOT, 'dist/native/spawner'));

// RELIABILITY R31: an `--exec` run's spawner helper is stopped (SIGSTOP) while its command
// runs, then its coordinator is SIGKILLed. A dead local owner's tasks are taken back at once,
// so the rerun must find the old command gone: the helper is woken when its coordinator
// dies and kills what it started, stopped or not. The side-effect log and the per-key canary
// of fixtures/handlers/record.mjs prove the key never ran twice at once.

const helperOf = (mark: string) => processesWithEnv(mark).find((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'spawner');
const alive = (pid: number) => !['gone', 'Z'].includes(processState(pid));

const left: number[] = [];
afterEach(() => {
  for (const pid of left.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

describe('a stopped spawner helper, then a SIGKILLed coordinator (R31)', () => {
  it.skipIf(!helperBuilt)('the rerun starts the task only once the old command is gone: never twice at once', async () => {
    const p = projectWithFiles(1);
    const env = { SIDE_EFFECT_LOG: p.log, CANARY_DIR: p.dir, SD_MARK: p.dir };
    const args = ['run', 'src', '--exec', `node ${handler('record-exec')}`, '-j', '1', '--retries', '2', '--quiet'];
    const first = startCli(args, { cwd: p.dir, env: { ...env, SLEEP_MS: '4000' } });
    await waitFor(() => logEntries(p.log).some((e) => e.type === 'start'), 20_000, 'the command to start');
    const helper = helperOf(p.dir);
    expect(helper, 'the spawner helper runs the command').toBeDefined();
    left.push(helper!);
    const oldCommand = (logEntries(p.log)[0] as { pid: number }).pid;
    process.kill(helper!, 'SIGSTOP');
    const exited = new Promise((r) => first.once('exit', r));
    first.kill('SIGKILL');
    await exited; // not its 'close': the stopped helper holds its stderr open

    const second = await runCli(args, { cwd: p.dir, env: { ...env, SLEEP_MS: '10' } });
    expect(second.code, second.stderr).toBe(0);
    expect(alive(oldCommand), 'the old command outlived its coordinator').toBe(false);
    expect(checkInvariants({ dbPath: dbPathIn(p.dir), keys: p.keys, retries: 2, logPath: p.log, kills: 1, concurrency: 1 })).toEqual([]);
    // Nothing the first run started is left: neither its helper nor the command.
    await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'no process of either run left');
  }, 60_000);
});
