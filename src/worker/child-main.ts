/**
 * The worker process (module handlers, and `--exec` without the spawner helper): a
 * WorkerCore on the coordinator's IPC channel. When the channel closes it kills what it
 * started and exits, so a SIGKILLed coordinator leaves no orphans; queued attempts never
 * start.
 */
import type { FromWorker, ToWorker } from './protocol.js';
import { Spawner } from './spawner.js';
import { WorkerCore } from './worker-core.js';

let spawner: Spawner | null | undefined;

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
});

process.on('message', (msg: ToWorker) => core.handle(msg));
process.on('disconnect', () => {
  core.killRunning();
  process.exit(0);
});
