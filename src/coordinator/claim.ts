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
  /** How many tasks each place claims (a group's, SPEC §10; 1 without groups), and whether they are dealt round the places (pool.claimShape). */
  shape: { perPlace: number; dealt: boolean };
  /** Settlements committed in the same transaction. */
  ended: Queued[];
  /** Attempts claimed as queued that have started since the last commit. */
  starts: AttemptStart[];
  /** Declared outputs put in place since the last commit: confirmed in the same transaction. */
  placed: { taskId: number; temp: string }[];
  /** --rate-key: the key gates' spacing (ClaimRequest.keyed); absent: none. */
  keyed?: { spacingMs: number; burst: number } | undefined;
}

export interface Claimed {
  /** The settlements the store applied, by token, with the status each left its task in (the others were fenced off). */
  applied: Map<number, TaskStatus>;
  /** What each worker is handed, place by place, in claim order: each place's tasks run as one group or more (groups.ts). */
  handOut: Map<PoolWorker, ClaimedTask[][]>;
  /** Tokens claimed as queued: their task shows queued until its attempt starts. */
  queued: Set<number>;
  /** Whether places were left without a task (the loop then sleeps until one is due). */
  unfilled: boolean;
}

/**
 * A worker's place behind an attempt it holds already (or behind another place claimed now) is
 * queued. Each place claims `perPlace` tasks (a group's, SPEC §10), all queued or none.
 */
function claimSlots(free: PoolWorker[], { perPlace, dealt }: ClaimRound['shape']): ClaimSlot[] {
  const places = new Map<PoolWorker, number>();
  const slots = free.map((w) => {
    const place = w.queue.length + (places.get(w) ?? 0);
    places.set(w, (places.get(w) ?? 0) + 1);
    return { workerId: w.id, pid: w.pid, queued: place > 0 };
  });
  // Slot i is place placeOf(i)'s: dealt round the places, or each place's in turn.
  return Array.from({ length: slots.length * perPlace }, (_, i) => slots[placeOf(i, slots.length, perPlace, dealt)]!);
}

/** The place (into `free`) whose slot the i-th claimed task fills. */
function placeOf(i: number, places: number, perPlace: number, dealt: boolean): number {
  return dealt ? i % places : Math.floor(i / perPlace);
}

/** The settlements a commit applied, by token, with the status each left its task in. */
export function appliedOf(applied: Applied[]): Map<number, TaskStatus> {
  return new Map(applied.map((a) => [a.token, a.status]));
}

/** Commits `ended`, `starts` and `placed` and claims for `free`, in one transaction of the store. */
async function commitAndClaim(round: ClaimRound): Promise<Claimed> {
  const { batch, free, shape } = round;
  const slots = claimSlots(free, shape);
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
    ...(round.keyed ? { keyed: round.keyed } : {}),
  };
  const { applied, claimed } = await round.store.settleAndClaim(
    round.ended.map((q) => q.settlement),
    request,
    round.placed,
  );
  const handOut = new Map<PoolWorker, ClaimedTask[][]>();
  const queued = new Set<number>();
  // Task i fills slot i, its place's: the worker the store recorded it on. Places go round the
  // workers (freePlaces), so a claim that comes up short still reaches each of them when dealt.
  const byPlace: ClaimedTask[][] = free.map(() => []);
  claimed.forEach((task, i) => {
    if (slots[i]!.queued) queued.add(task.token);
    byPlace[placeOf(i, free.length, shape.perPlace, shape.dealt)]!.push(task);
  });
  byPlace.forEach((tasks, p) => {
    if (tasks.length === 0) return;
    const places = handOut.get(free[p]!) ?? [];
    places.push(tasks);
    handOut.set(free[p]!, places);
  });
  return { applied: appliedOf(applied), handOut, queued, unfilled: free.length > 0 && claimed.length < slots.length };
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
