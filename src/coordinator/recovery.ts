import type { LeaseStore, LostAttempt, ReleasedTask } from '../store/task-store.js';
import { isDeadOwner, isLiveLocalOwner } from '../lease-owner.js';
import { killOwnerProcesses } from '../worker/owner-processes.js';

/**
 * Releases RUNNING tasks whose lease expired (measured from claim or the last
 * heartbeat) or whose owner is a provably dead process on this host. Their attempts
 * are recorded LOST and stay counted. An owner on this host whose process exists keeps
 * its tasks whatever its lease says: only a remote owner can merely look dead. What a dead
 * owner on this host started and left running (its helpers were killed with it) is killed,
 * and waited for, before its tasks are released to run again. `beforeRelease`
 * (their temporary files go) runs inside the release, before it is committed.
 */
export async function recoverStale(
  store: LeaseStore,
  batchId: number | null,
  self: string,
  now = Date.now(),
  beforeRelease?: (lost: LostAttempt[]) => void,
): Promise<ReleasedTask[]> {
  return (await recoverSeeing(store, batchId, self, now, beforeRelease)).released;
}

/** recoverStale, and whether another live coordinator on this machine holds running tasks (its death is noticed at once). */
export async function recoverSeeing(
  store: LeaseStore,
  batchId: number | null,
  self: string,
  now: number,
  beforeRelease?: (lost: LostAttempt[]) => void,
): Promise<{ released: ReleasedTask[]; liveHere: boolean }> {
  const owners = (await store.runningOwners(batchId)).filter((o) => o !== self);
  const dead = owners.filter((o) => isDeadOwner(o));
  const live = owners.filter((o) => isLiveLocalOwner(o));
  await killOwnerProcesses(dead);
  return { released: await store.releaseStale(batchId, now, dead, self, live, beforeRelease), liveHere: live.length > 0 };
}
