import type { LeaseStore, LostAttempt, ReleasedTask } from '../store/task-store.js';
import { isDeadOwner, isLiveLocalOwner } from '../lease-owner.js';
import { killOwnerProcesses } from '../worker/owner-processes.js';
import type { RenewalWatch } from './renewal-watch.js';

/** What a look at the batch's owners found. */
export interface Recovered {
  /** Tasks taken back, their attempts recorded LOST. */
  released: ReleasedTask[];
  /** Another live coordinator on this machine holds running tasks (its death is noticed at once). */
  liveHere: boolean;
  /** An owner's lease has passed but its renewals have not yet been seen to stop for a lease: it is watched, not acted on. */
  watching: boolean;
}

/**
 * Releases RUNNING tasks whose owner is a provably dead process on this host, at once, and
 * those of an owner that cannot be proven dead (another host, another PID namespace) once its
 * lease expired (measured from claim or the last heartbeat) and `watch` has seen its renewals
 * stop for a whole lease: a step of the clock leases are measured on must never turn a live,
 * heartbeating owner into a dead one (renewal-watch.ts). Their attempts are recorded LOST and
 * stay counted. An owner on this host whose process exists keeps its tasks whatever its lease
 * says. What a dead owner on this host started and left running (its helpers were killed with
 * it) is killed, and waited for, before its tasks are released to run again: while one of
 * those processes outlives its SIGKILL, the owner keeps its tasks. `beforeRelease`
 * (their temporary files go) runs inside the release, before it is committed.
 */
export async function recoverStale(
  store: LeaseStore,
  batchId: number | null,
  self: string,
  watch: RenewalWatch,
  now = Date.now(),
  beforeRelease?: (lost: LostAttempt[]) => void,
): Promise<Recovered> {
  const owners = (await store.runningOwners(batchId, now)).filter((o) => o.owner !== self);
  const dead = owners.map((o) => o.owner).filter((o) => isDeadOwner(o));
  const live = owners.map((o) => o.owner).filter((o) => isLiveLocalOwner(o));
  const judged = new Set([...dead, ...live]);
  const renewing = watch.renewing(owners.filter((o) => !judged.has(o.owner)));
  const watching = owners.some((o) => o.expired && renewing.includes(o.owner));
  // A dead owner one of whose processes outlived its SIGKILL (frozen, in an uninterruptible
  // sleep) keeps its tasks, as a live one does, until a later look finds them all gone.
  const lingering = dead.length > 0 ? await killOwnerProcesses(dead) : [];
  const gone = dead.filter((o) => !lingering.includes(o));
  const released = await store.releaseStale(batchId, now, gone, self, [...live, ...lingering, ...renewing], beforeRelease);
  return { released, liveHere: live.length > 0 || lingering.length > 0, watching };
}
