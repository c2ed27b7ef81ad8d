/**
 * The worker process (module handlers, and `--exec` without the spawner helper): a
 * WorkerCore on the coordinator's IPC channel. It leads its own process group (the pool
 * forks it detached), and a module handler's child processes are in that group. When the
 * channel closes it kills what it started, its handlers' children included, and exits, so
 * a SIGKILLed coordinator leaves no orphans; queued attempts never start.
 */
import { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { stopOthersInGroup } from './group-stop.js';
import { groupMembers, killGroup } from './kill-group.js';
import type { FromWorker, ToWorker } from './protocol.js';
import { Spawner } from './spawner.js';
import { WorkerCore } from './worker-core.js';

let spawner: Spawner | null | undefined;
let killGraceMs = 2000;

const core = new WorkerCore({
  send: (msg: FromWorker, written?: () => void) => {
    if (process.send) process.send(msg, undefined, {}, () => written?.());
    else written?.();
  },
  spawner: () => {
    if (spawner === undefined) spawner = Spawner.start();
    if (spawner?.dead) spawner = null; // it died: Node's spawn from now on
    return spawner;
  },
  // A getrusage() call: reading the current RSS costs more than a no-op task.
  peakRss: () => process.resourceUsage().maxRSS * 1024,
  reportGroups: (viaSpawner) => !viaSpawner,
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
