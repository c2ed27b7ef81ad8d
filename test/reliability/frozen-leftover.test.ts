import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, sleep, startCli, waitFor } from '../helpers/cli.js';
import { writeGatedScript } from '../helpers/gated-script.js';
import { processState, processesWithEnv, signalPending } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, logEntries } from '../helpers/store.js';
import { missing } from '../helpers/services.js';
import { checkInvariants } from './invariants.js';

// A cgroup v1 freezer holds a frozen process past its SIGKILL (it dies only once thawed), as
// an uninterruptible sleep does: the one way to make a process outlive its kill at will.
const FREEZER = '/sys/fs/cgroup/freezer';
const canFreeze = existsSync(join(FREEZER, 'cgroup.procs')) && process.getuid?.() === 0;
const helperBuilt = !missing('cc', 'the frozen leftover test') && existsSync(join(ROOT, 'dist/native/spawner'));

// RELIABILITY R40 (its sweep): a run dies with its helper, leaving its command running; the
// rerun takes the dead run's tasks back only once what the dead run left is gone. Here that
// command outlives its SIGKILL (frozen) for longer than the rerun waits for it (1 s): the
// rerun must keep the task, as it keeps a live owner's, until the command is gone, and not run
// the key beside it. The per-key flock canary (a lock is freed only when its holder is gone)
// and the side-effect log prove the key never ran twice at once.

const helperOf = (mark: string) => processesWithEnv(mark).find((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'spawner');
const killPending = (pid: number) => signalPending(pid, 9);
/** Removes the cgroup once the process it held has left it (a dying one takes a moment). */
const removeCgroup = (cgroup: string) => {
  for (let i = 0; i < 100; i++) {
    try {
      return rmdirSync(cgroup);
    } catch {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
};

/**
 * Freezes a cgroup v1 freezer group. A group whose process forks (the gated script starts a
 * `sleep` every 20 ms) can stay FREEZING: the kernel's freezer misses a task forked while it
 * sweeps, and its documentation says to write FROZEN again, or thaw and retry. Done here until
 * the group reads FROZEN, thawing briefly every 50 tries.
 */
async function freeze(cgroup: string): Promise<void> {
  const state = join(cgroup, 'freezer.state');
  for (let tries = 1, end = Date.now() + 15_000; Date.now() < end; tries++) {
    if (tries % 50 === 0) {
      writeFileSync(state, 'THAWED');
      await sleep(10);
    }
    writeFileSync(state, 'FROZEN');
    await sleep(tries % 25 === 0 ? 10 : 1);
    if (readFileSync(state, 'utf8').trim() === 'FROZEN') return;
  }
  throw new Error(`${cgroup} stayed FREEZING for 15 s`);
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) {
    try {
      c();
    } catch {
      // gone already
    }
  }
});

describe('a dead run whose command outlives its SIGKILL (R40)', () => {
  it.skipIf(!canFreeze || !helperBuilt)('the rerun keeps the task until the command is gone: never twice at once', async () => {
    const p = projectWithFiles(1);
    const script = writeGatedScript(p.dir, '"$GATE"');
    const env = { SIDE_EFFECT_LOG: p.log, CANARY_DIR: p.dir, SD_MARK: p.dir };
    const args = ['run', 'src', '--exec', `sh ${script}`, '-j', '1', '--retries', '2', '--quiet'];
    cleanups.push(() => processesWithEnv(p.dir).forEach((pid) => process.kill(pid, 'SIGKILL')));

    // The first run's gate never opens: its command runs until something kills it.
    const first = startCli(args, { cwd: p.dir, env: { ...env, GATE: join(p.dir, 'never'), RUN: '1' } });
    await waitFor(() => logEntries(p.log).some((e) => e.type === 'start'), 20_000, 'the first command to start');
    const helper = helperOf(p.dir);
    expect(helper, 'the spawner helper runs the command').toBeDefined();
    const oldCommand = (logEntries(p.log)[0] as { pid: number }).pid;

    // The command frozen, then its run killed with its helper (which cannot kill it first).
    const cgroup = join(FREEZER, `sd-frozen-${process.pid}-${Date.now()}`);
    mkdirSync(cgroup);
    const thaw = () => writeFileSync(join(cgroup, 'freezer.state'), 'THAWED');
    cleanups.push(() => removeCgroup(cgroup));
    cleanups.push(thaw);
    writeFileSync(join(cgroup, 'cgroup.procs'), String(oldCommand));
    await freeze(cgroup);
    process.kill(first.pid!, 'SIGSTOP');
    process.kill(helper!, 'SIGKILL');
    await waitFor(() => ['gone', 'Z'].includes(processState(helper!)), 10_000, 'the helper to die');
    const exited = new Promise((r) => first.once('exit', r));
    first.kill('SIGKILL');
    await exited;

    // The rerun finds the dead run's command, SIGKILLs it, and waits for it (1 s); frozen, it
    // lives on. Given 4 s more, a rerun that did not keep the task has run the key again.
    const gate = join(p.dir, 'gate');
    writeFileSync(gate, '');
    const second = startCli(args, { cwd: p.dir, env: { ...env, GATE: gate, RUN: '2' } });
    await waitFor(() => killPending(oldCommand), 20_000, 'the rerun to SIGKILL the dead run\'s command');
    const rerunStarted = () => logEntries(p.log).some((e) => e.type === 'start' && (e as { run?: string }).run === '2');
    const killedAt = Date.now();
    while (Date.now() - killedAt < 5000 && !rerunStarted()) await sleep(50);
    expect(rerunStarted(), 'the rerun ran the key while the dead run\'s command was alive').toBe(false);
    expect(['gone', 'Z']).not.toContain(processState(oldCommand));

    // Thawed, it dies of its SIGKILL; the rerun takes the task back and runs it.
    thaw();
    const result = await second.result;
    expect(result.code, result.stderr).toBe(0);
    expect(rerunStarted()).toBe(true);
    expect(logEntries(p.log).filter((e) => e.type === 'double')).toEqual([]);
    expect(checkInvariants({ dbPath: dbPathIn(p.dir), keys: p.keys, retries: 2, logPath: p.log, kills: 1, concurrency: 1 })).toEqual([]);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 10_000, 'no process of either run left');
  }, 60_000);
});
