/** A dead worker's attempts handed back: what of them still runs killed, each reported once nothing of it is left. */
import { killLeftovers } from '../worker/attempt-processes.js';
import { killGroup } from '../worker/kill-group.js';
import { helperCommandLine } from '../worker/spawner.js';
import { InProcessWorker } from './in-process-worker.js';
import * as slots from './slots.js';
import type { PooledWorker } from './worker-messages.js';


/**
 * SIGKILLs the worker's exec attempts' process groups and its own: a forked worker leads its
 * own group, where its module handler's children are (undefined: no worker of this pool).
 */
export function killWorker(worker: PooledWorker | undefined): void {
  if (!worker) return;
  for (const pgid of worker.groups.values()) killGroup(pgid, 'SIGKILL');
  if (worker.pid) killGroup(worker.pid, 'SIGKILL');
}

/**
 * Empties a dead worker: kills its attempts' process groups and its own (its module handler's
 * children must not outlive it: its attempt may run again elsewhere at once), then `report`s its
 * attempts — `running`, those that had started; `queued`, those that never did. `replace` is
 * called once the worker's slot ({%}) may be taken again: at once, or, when its exec attempts'
 * commands are being swept, once they are gone (no two running commands may share a slot).
 * Returns that sweep while it runs, else null.
 */
export function handBack(worker: PooledWorker, report: (running: number[], queued: number[]) => void, replace: () => void): Promise<void> | null {
  const { running, queued } = slots.emptyQueue(worker, worker.groups);
  const groups = [...worker.groups.values()];
  killWorker(worker);
  if (worker.marks.size === 0) replace();
  const told = (started: number[]) => report([...running, ...queued.filter((t) => started.includes(t))], queued.filter((t) => !started.includes(t)));
  const tokens = [...worker.marks.keys()];
  const marks = tokens.map((t) => worker.marks.get(t)!());
  worker.groups.clear();
  worker.marks.clear();
  if (tokens.length === 0) {
    told([]);
    return null;
  }
  // Its attempts end, and may run again, only once nothing of them is left: a command its
  // helper started without saying so (killed in between) is found by its attempt's mark.
  const helper = worker.proc instanceof InProcessWorker ? worker.proc.helperCommandLine : worker.pid ? helperCommandLine(worker.pid) : null;
  return killLeftovers({ groups, marks, helper })
    .then((found) => told(tokens.filter((_, i) => found.has(i))))
    .finally(replace);
}
