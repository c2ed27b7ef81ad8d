import type { ReleasedTask, TaskStore } from '../store/task-store.js';
import { isDeadOwner } from './owner.js';

/**
 * Releases RUNNING tasks whose lease expired (measured from claim or the last
 * heartbeat) or whose owner is a provably dead process on this host. Their attempts
 * are recorded LOST and stay counted.
 */
export async function recoverStale(store: TaskStore, batchId: number | null, self: string, now = Date.now()): Promise<ReleasedTask[]> {
  const owners = await store.runningOwners(batchId);
  const dead = owners.filter((o) => o !== self && isDeadOwner(o));
  return store.releaseStale(batchId, now, dead, self);
}
