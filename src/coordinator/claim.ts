/** Where a task is claimed: one transaction commits what ended and claims a task for each free place in the pool. */
import { HOST } from '../lease-owner.js';
import type { PoolWorker } from '../pool/pool.js';
import type { Applied, AttemptStart, BatchRecord, ClaimedTask, ClaimSlot, TaskStatus } from '../store/task-store.js';
import type { CommitQueue, Queued } from './commit-queue.js';
import type { OutputPlacement } from './output-placement.js';
import type { RunStore } from './run-types.js';

export interface ClaimRound {
  store: RunStore;
  batch: BatchRecord;
  owner: string;
  leaseMs: number;
  now: number;
  /** The places to fill, a worker once for each place it has free. */
  free: PoolWorker[];
  /** Settlements committed in the same transaction. */
  ended: Queued[];
  /** Attempts claimed as queued that have started since the last commit. */
  starts: AttemptStart[];
  /** Declared outputs put in place since the last commit: confirmed in the same transaction. */
  placed: { taskId: number; temp: string }[];
}

export interface Claimed {
  /** The settlements the store applied, by token, with the status each left its task in (the others were fenced off). */
  applied: Map<number, TaskStatus>;
  /** What each worker is handed, in claim order. */
  handOut: Map<PoolWorker, ClaimedTask[]>;
  /** Tokens claimed as queued: their task shows queued until its attempt starts. */
  queued: Set<number>;
  /** Whether places were left without a task (the loop then sleeps until one is due). */
  unfilled: boolean;
}

/** A worker's place behind an attempt it holds already (or behind another place claimed now) is queued. */
function claimSlots(free: PoolWorker[]): ClaimSlot[] {
  const places = new Map<PoolWorker, number>();
  return free.map((w) => {
    const place = w.queue.length + (places.get(w) ?? 0);
    places.set(w, (places.get(w) ?? 0) + 1);
    return { workerId: w.id, pid: w.pid, queued: place > 0 };
  });
}

/** The settlements a commit applied, by token, with the status each left its task in. */
export function appliedOf(applied: Applied[]): Map<number, TaskStatus> {
  return new Map(applied.map((a) => [a.token, a.status]));
}

/** Commits `ended`, `starts` and `placed` and claims for `free`, in one transaction of the store. */
async function commitAndClaim(round: ClaimRound): Promise<Claimed> {
  const { batch, free } = round;
  const slots = claimSlots(free);
  const request = {
    batchId: batch.id,
    owner: round.owner,
    host: HOST,
    now: round.now,
    leaseMs: round.leaseMs,
    slots,
    started: round.starts,
    // The version whose handler the pool loaded: under a newer one the store claims nothing.
    jobVersion: batch.jobVersion,
  };
  const { applied, claimed } = await round.store.settleAndClaim(
    round.ended.map((q) => q.settlement),
    request,
    round.placed,
  );
  const handOut = new Map<PoolWorker, ClaimedTask[]>();
  const queued = new Set<number>();
  claimed.forEach((task, i) => {
    if (slots[i]!.queued) queued.add(task.token);
    const tasks = handOut.get(free[i]!);
    if (tasks) tasks.push(task);
    else handOut.set(free[i]!, [task]);
  });
  return { applied: appliedOf(applied), handOut, queued, unfilled: free.length > 0 && claimed.length < free.length };
}

/**
 * A tick's claim: takes what waits to be committed (settlements, starts of queued attempts,
 * outputs put in place since the last tick: none needs a commit of its own), commits it and
 * claims for `free` in one transaction. What a failed commit did not write goes back, in order.
 * Returns the claim and the settlements it committed.
 */
export async function claimRound(
  round: Omit<ClaimRound, 'ended' | 'starts' | 'placed'>,
  commits: CommitQueue,
  placement: OutputPlacement,
): Promise<{ claimed: Claimed; ended: Queued[] }> {
  const { ended, starts } = commits.take();
  const placed = placement.take();
  try {
    return { claimed: await commitAndClaim({ ...round, ended, starts, placed }), ended };
  } catch (err) {
    commits.restore(ended, starts);
    placement.restore(placed);
    throw err;
  }
}
