import type { BatchRecord, ClaimRequest, ClaimedTask, Counts, PendingOutput, ReleasedTask, Settlement, TaskStatus } from './task-store.js';

/** What names a store, for messages and the log folder. */
export interface StoreInfo {
  readonly location: string;
  /**
   * The store's identity: 32 hex digits, random, written once when the store was created
   * (or upgraded to a version that has one) and never changed. It names the store's log folder.
   */
  readonly identity: string;
}

/** The reads a coordinator's loop makes between ticks: its batch, what is left, when the next retry is due. */
export interface BatchProgress {
  findBatch(name: string): Promise<BatchRecord | undefined>;
  counts(batchId: number): Promise<Counts>;
  /** The earliest `next_run_at` of a PENDING task whose needs are met, or null. */
  nextDueAt(batchId: number): Promise<number | null>;
}

/** The lease verbs: what a coordinator (of `run` or `worker`) needs to claim, run, settle and recover tasks. */
export interface LeaseStore extends StoreInfo, BatchProgress {
  /** Atomically claim up to one PENDING, due task whose needs succeeded per slot, counting the attempt. */
  claim(request: ClaimRequest): Promise<ClaimedTask[]>;
  /**
   * Extend the leases of every task `owner` holds; returns their tokens, so an owner learns
   * which of its attempts lost their task (taken over while it was frozen).
   */
  heartbeat(owner: string, leaseExpiresAt: number): Promise<number[]>;
  /**
   * settle, then claim, in one transaction: what a coordinator does on every tick. `placed`:
   * declared outputs now in place (as outputsPlaced), confirmed first, so the claim sees them.
   */
  settleAndClaim(settlements: Settlement[], request: ClaimRequest, placed?: { taskId: number; temp: string }[]): Promise<{ applied: number[]; claimed: ClaimedTask[] }>;
  /** Commit attempt outcomes in one transaction; returns the tokens that still held their task, in the order given. */
  settle(settlements: Settlement[]): Promise<number[]>;
  /** Current status of the given tasks (the store, not a claim-time copy, decides whether a failure ended a task). */
  statuses(taskIds: number[]): Promise<Map<number, TaskStatus>>;
  /** The owners holding RUNNING tasks in the batch (or all batches), for dead-owner checks. */
  runningOwners(batchId: number | null): Promise<string[]>;
  /**
   * Return to PENDING (or FAILED when out of attempts) tasks whose lease expired or whose
   * owner is dead, never those of `self` (a live coordinator's own) nor of `liveOwners`
   * (live processes on this host, stopped ones included); records LOST.
   */
  releaseStale(batchId: number | null, now: number, deadOwners: string[], self: string, liveOwners?: string[]): Promise<ReleasedTask[]>;
  /** The batch's committed successes whose declared output's rename is not known to be done. */
  pendingOutputs(batchId: number): Promise<PendingOutput[]>;
  /** Their outputs are in place: forgets each temporary file (only while it is still the one recorded). */
  outputsPlaced(placed: { taskId: number; temp: string }[]): Promise<void>;
  /**
   * This process's wall clock stepped by `stepMs`: moves the given waiting retries (each still
   * PENDING and due at `dueAt`, as this process scheduled it) by the step, so each stays as far
   * away as its backoff said. Returns the ones moved. A store whose times are on another clock
   * (PostgreSQL: the server's) moves nothing.
   */
  shiftRetries(retries: RetryDue[], stepMs: number): Promise<RetryDue[]>;
}

/** A retry a coordinator scheduled: the task, and when it is due. */
export interface RetryDue {
  taskId: number;
  dueAt: number;
}
