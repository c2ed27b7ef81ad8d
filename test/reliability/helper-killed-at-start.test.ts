import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, handler, startCli, waitFor } from '../helpers/cli.js';
import { writeGatedScript } from '../helpers/gated-script.js';
import { childrenOf, processState, processesWithEnv, signalPending } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, logEntries, runningCount } from '../helpers/store.js';
import { missing } from '../helpers/services.js';
import { checkInvariants } from './invariants.js';

const helperBuilt = !missing('cc', 'the helper killed as it starts a command test') && existsSync(join(ROOT, 'dist/native/spawner'));
const canTrace = !missing('strace', 'the helper killed as it starts a command test');

// RELIABILITY R46 (a finding of the kill campaign): an `--exec` slot's spawner helper is
// SIGKILLed after it started a command but before its worker learned that command's process
// group (the helper's "started" reply still unwritten), or while it was starting it (between
// the spawn and the command's exec, where the new process still reads as the helper). The run
// goes on: its pool replaces the helper and runs the attempts it held again. The command the
// dead helper started must be gone before the task's next attempt starts: a per-key flock
// canary and the side-effect log prove the key never ran twice at once. Each moment is held
// open with strace, not waited for.

const tracer = (pid: number) => Number(/^TracerPid:\s*(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
const helperOf = (mark: string) => processesWithEnv(mark).find((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'spawner');

/** Each test's mark (its project folder, in its run's environment): what is left of its run is killed after it, as is its strace. */
const marks: string[] = [];
const tracers: ChildProcess[] = [];
afterEach(() => {
  for (const t of tracers.splice(0)) if (t.exitCode === null && t.signalCode === null) t.kill('SIGKILL');
  for (const pid of marks.splice(0).flatMap((mark) => processesWithEnv(mark))) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

/**
 * A run of two gated tasks on one slot, its first command running and the second queued in
 * the helper. `gated.sh` holds the key's flock while it runs (a second holder logs `double`),
 * logs its start, and waits until a gate file named after its key exists.
 */
async function gatedRun(forked = false) {
  const p = projectWithFiles(2);
  marks.push(p.dir);
  const script = writeGatedScript(p.dir, '"$GATES/$SPLITDANCE_KEY"');
  const env = { SIDE_EFFECT_LOG: p.log, CANARY_DIR: p.dir, SD_MARK: p.dir, GATES: p.dir };
  // /bin/sh by its path: the helper's spawn makes one execve, not one per PATH entry.
  const exec = `/bin/sh ${script}`;
  let args = ['run', 'src', '--exec', exec, '-j', '1', '--retries', '2', '--backoff', '10ms', '--quiet'];
  let keys = p.keys;
  if (forked) {
    // A module stage before the exec one: the slot's worker is a forked process, whose own
    // spawner helper runs the exec stage's commands.
    const stages = [
      { name: 'a', handler: handler('ok') },
      { name: 'b', exec, needs: ['a'] },
    ];
    writeFileSync(join(p.dir, 'splitdance.json'), JSON.stringify({ source: 'src', retries: 2, backoff: '10ms', stages }));
    mkdirSync(join(p.dir, 'b'));
    args = ['run', '-j', '1', '--quiet'];
    keys = stages.flatMap((st) => p.keys.map((k) => `${st.name}/${k}`));
  }
  const run = startCli(args, { cwd: p.dir, env });
  const starts = () => logEntries(p.log).filter((e) => e.type === 'start') as { key: string; pid: number; attempt: number }[];
  await waitFor(() => starts().length === 1, 20_000, 'the first command to start');
  // The slot holds its running attempt and the next, queued in the helper (SPEC §5).
  await waitFor(() => runningCount(dbPathIn(p.dir)) >= 2, 20_000, 'an attempt queued behind the running one');
  const helper = helperOf(p.dir);
  expect(helper, 'the spawner helper runs the command').toBeDefined();
  const first = starts()[0]!;
  const other = keys.find((k) => k !== first.key && k.slice(0, 2) === first.key.slice(0, 2))!;
  /** The key's next start after the first command's. */
  const startOf = (key: string) => starts().slice(1).find((e) => e.key === key);
  /** Ends the run: the second key's gate opens too; it must end 0 with no key run twice at once. */
  const finish = async () => {
    writeFileSync(join(p.dir, other), '');
    const result = await run.result;
    expect(result.code, result.stderr).toBe(0);
    expect(logEntries(p.log).filter((e) => e.type === 'double')).toEqual([]);
    expect(checkInvariants({ dbPath: dbPathIn(p.dir), keys, retries: 2, logPath: p.log, kills: 1, concurrency: 1 })).toEqual([]);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 10_000, 'no process of the run left');
  };
  return { p, helper: helper!, first, other, starts, startOf, finish };
}

const trace = async (helper: number, args: string[]) => {
  const strace = spawn('strace', ['-qq', '-o', '/dev/null', ...args, '-p', String(helper)], { stdio: 'ignore' });
  tracers.push(strace);
  await waitFor(() => tracer(helper) !== 0, 20_000, 'strace to attach to the helper');
  return strace;
};

describe('a spawner helper SIGKILLed as it starts a command (R46)', () => {
  it.skipIf(!helperBuilt || !canTrace)('after the start, before it said so: the command is gone before the task runs again', async () => {
    const { p, helper, first, other, starts, startOf, finish } = await gatedRun();
    // Its writes after the first (its wake-up on the first command's end) held for 10 s.
    const strace = await trace(helper, ['-e', 'trace=write', '-e', 'inject=write:delay_enter=10s:when=2+']);
    // The first command ends; the helper starts the queued one and is held before it says so.
    writeFileSync(join(p.dir, first.key), '');
    await waitFor(() => startOf(other) !== undefined, 20_000, 'the queued command to start');
    const unreported = startOf(other)!;
    process.kill(helper, 'SIGKILL');
    // strace would sleep out the delay before it let the helper's parent see it die.
    strace.kill('SIGKILL');

    // The pool replaces the helper and runs the key again: by then its old command is gone.
    const rerun = () => starts().find((e) => e.key === other && e.pid !== unreported.pid);
    await waitFor(() => rerun() !== undefined, 20_000, 'the key to run again');
    expect(['gone', 'Z'], 'the command the killed helper started outlived its attempt').toContain(processState(unreported.pid));
    await finish();
  }, 60_000);

  it.skipIf(!helperBuilt || !canTrace)('between the spawn and the exec: the command never runs beside the task\'s next attempt', async () => {
    const { p, helper, first, other, starts, finish } = await gatedRun();
    // The helper's new process (followed: -f) held for 10 s as it asks to exec the command.
    const strace = await trace(helper, ['-f', '-e', 'trace=execve', '-e', 'inject=execve:delay_enter=10s']);
    writeFileSync(join(p.dir, first.key), '');
    // Until its exec it shares the helper's memory: its command line is the helper's.
    const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'latin1');
    const spawning = () => childrenOf(helper).find((pid) => processState(pid) !== 'Z' && cmdline(pid) === cmdline(helper));
    await waitFor(() => spawning() !== undefined, 20_000, 'the helper to start the queued command');
    const child = spawning()!;
    process.kill(helper, 'SIGKILL');

    // The pool replaces the helper and runs the key again: by then the process the dead
    // helper was starting has been killed (strace holds it until it lets go). Had it not
    // been, it would run the old attempt once strace lets go, beside the new one.
    await waitFor(() => starts().find((e) => e.key === other) !== undefined, 20_000, 'the key to run again');
    expect(['gone', 'Z'].includes(processState(child)) || signalPending(child, 9), 'the process the killed helper was starting was not killed').toBe(true);
    strace.kill('SIGKILL');
    await finish();
    expect(starts().filter((e) => e.key === other), 'the old attempt never ran').toHaveLength(1);
  }, 60_000);

  it.skipIf(!helperBuilt || !canTrace)('a forked worker SIGKILLed while its helper has not said so: the command is gone before the task runs again', async () => {
    const { p, helper, first, other, starts, startOf, finish } = await gatedRun(true);
    const worker = Number(readFileSync(`/proc/${helper}/stat`, 'latin1').split(') ')[1]!.split(' ')[1]);
    // The helper's writes after its wake-up held for 10 s: it cannot say it started the next
    // command, nor, once its worker is gone, kill it, before the pool runs the key again.
    const strace = await trace(helper, ['-e', 'trace=write', '-e', 'inject=write:delay_enter=10s:when=2+']);
    writeFileSync(join(p.dir, first.key), '');
    await waitFor(() => startOf(other) !== undefined, 20_000, 'the queued command to start');
    const unreported = startOf(other)!;
    process.kill(worker, 'SIGKILL');

    const rerun = () => starts().find((e) => e.key === other && e.pid !== unreported.pid);
    await waitFor(() => rerun() !== undefined, 20_000, 'the key to run again');
    expect(['gone', 'Z'], 'the command the dead worker\'s helper started outlived its attempt').toContain(processState(unreported.pid));
    strace.kill('SIGKILL');
    await finish();
  }, 60_000);
});
