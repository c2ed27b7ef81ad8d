/**
 * The worker process (module handlers, and `--exec` without the spawner helper or beside a
 * module stage): a WorkerCore on the coordinator's IPC channel. It leads its own process group (the pool
 * forks it detached), and a module handler's child processes are in that group. When the
 * channel closes it kills what it started, its handlers' children included, and exits, so
 * a SIGKILLed coordinator leaves no orphans; queued attempts never start.
 */
import { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { stopOthersInGroup } from './group-stop.js';
import { groupMembers, killGroup } from './kill-group.js';
import { HelperLauncher } from './helper-launcher.js';
import type { Launcher } from './launcher.js';
import { NodeLauncher } from './node-launcher.js';
import { raiseOomScore } from './oom-score.js';
import type { FromWorker, ToWorker } from './protocol.js';
import { Spawner } from './spawner.js';
import { WorkerCore } from './worker-core.js';

let launcher: Launcher | undefined;
let killGraceMs = 2000;

const core = new WorkerCore({
  send: (msg: FromWorker, written?: () => void) => {
    if (process.send) process.send(msg, undefined, {}, () => written?.());
    else written?.();
  },
  launcher: () => (launcher ??= startLauncher()),
  // A getrusage() call: reading the current RSS costs more than a no-op task.
  peakRss: () => process.resourceUsage().maxRSS * 1024,
  afterModuleAttempt: async (aborted) => {
    // A whole-group scan reads /proc; a finished attempt pays for it only if the handler
    // still has a child (a grandchild it orphaned is caught when the worker ends). Even the
    // check reads /proc (~20 µs, half a no-op task), so it is made only once something in
    // this process has started a child since the last check found none.
    if (!aborted && !mayHaveChildren) return;
    if (aborted || hasChildren()) await stopOthersInGroup(process.pid, process.pid, killGraceMs);
    mayHaveChildren = hasChildren();
  },
});

/**
 * The spawner helper when it is built, else Node's spawn. A helper that dies has taken this
 * worker with it, as it does an in-process worker: what it ran is killed, and the worker ends
 * by the same signal, so its attempt is CRASHED and its queued ones never start.
 */
function startLauncher(): Launcher {
  const spawner = Spawner.start();
  if (!spawner) return new NodeLauncher();
  spawner.onExit((code, signal) => {
    core.killRunning();
    process.stderr.write(`its spawner helper ${signal ? `was killed by ${signal}` : `exited with code ${code}`}\n`);
    if (groupMembers(process.pid, process.pid)?.length !== 0) killGroup(process.pid, 'SIGKILL');
    if (signal) process.kill(process.pid, signal);
    process.exit(70);
  });
  return new HelperLauncher(spawner);
}

/**
 * Set when this process starts a child: every asynchronous Node way of starting one (spawn,
 * exec, execFile, fork) goes through ChildProcess.prototype.spawn (not in Node's typings).
 * A spawnSync child has exited by the time it returns; its orphans are caught at worker end.
 */
let mayHaveChildren = false;
const proto = ChildProcess.prototype as unknown as { spawn: (...args: unknown[]) => unknown };
const spawnChild = proto.spawn;
proto.spawn = function (this: ChildProcess, ...args: unknown[]) {
  mayHaveChildren = true;
  return spawnChild.apply(this, args);
};

/** Whether this process has a live child process (/proc; false where it cannot tell). */
function hasChildren(): boolean {
  try {
    return readFileSync(`/proc/self/task/${process.pid}/children`, 'latin1').trim() !== '';
  } catch {
    return false;
  }
}

// Before the handler loads: the kernel takes this worker, and all it starts, before the coordinator.
raiseOomScore('self');
process.send?.({ type: 'booted' } satisfies FromWorker);
process.on('message', (msg: ToWorker) => {
  if (msg.type === 'load') killGraceMs = msg.killGraceMs;
  core.handle(msg);
});
process.on('disconnect', () => {
  core.killRunning();
  // Whatever a module handler started is in this group: killed with this process (at once:
  // the coordinator is gone or is shutting the pool down). Only a `setsid` daemon escapes.
  if (groupMembers(process.pid, process.pid)?.length !== 0) killGroup(process.pid, 'SIGKILL');
  process.exit(0);
});
