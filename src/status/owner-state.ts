import { readFileSync } from 'node:fs';
import { isDeadOwner, isLiveLocalOwner, parseOwner } from '../lease-owner.js';
import type { TaskRow } from '../store/task-store.js';

/**
 * Who holds a batch's RUNNING tasks, as `status` shows it (SPEC §7): a coordinator on this
 * machine that is alive, stopped (SIGSTOP, Ctrl-Z: alive, its tasks are not taken) or dead
 * (killed: the next `run` or `worker` takes its tasks back, recorded LOST), or one elsewhere,
 * which this machine cannot see (its lease decides).
 */
type OwnerState = 'alive' | 'stopped' | 'dead' | 'elsewhere';

export interface OwnerHold {
  owner: string;
  pid: number | null;
  state: OwnerState;
  /** Its RUNNING tasks in the batch (running and queued). */
  tasks: number;
}

function ownerState(owner: string): OwnerState {
  if (isDeadOwner(owner)) return 'dead';
  if (!isLiveLocalOwner(owner)) return 'elsewhere';
  return isStopped(parseOwner(owner)!.pid) ? 'stopped' : 'alive';
}

/** The holders of `running` (RUNNING tasks), most tasks first. */
export function ownerHolds(running: TaskRow[]): OwnerHold[] {
  const byOwner = new Map<string, number>();
  for (const t of running) if (t.leaseOwner) byOwner.set(t.leaseOwner, (byOwner.get(t.leaseOwner) ?? 0) + 1);
  return [...byOwner]
    .map(([owner, tasks]) => ({ owner, pid: parseOwner(owner)?.pid ?? null, state: ownerState(owner), tasks }))
    .sort((a, b) => b.tasks - a.tasks || a.owner.localeCompare(b.owner));
}

/** State T (stopped by a signal) or t (stopped by a tracer) in /proc/PID/stat. */
function isStopped(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state === 'T' || state === 't';
  } catch {
    return false;
  }
}
