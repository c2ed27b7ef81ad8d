import type { AttemptStart, BatchRecord, ClaimedTask, Settlement, TaskStatus } from '../store/task-store.js';
import type { RunObserver, StopReason } from './coordinator.js';
import { isUnavailable, type RunStore } from './outage.js';
import { formatMs } from '../job/units.js';
import { WallSteps } from '../wall-steps.js';
import { HOST } from '../lease-owner.js';
import type { PoolWorker } from '../pool/pool.js';
import { discardOutput } from '../output/commit-output.js';
import type { OutputPaths } from '../output/output-path.js';
import { OutputPlacement } from './output-placement.js';

/** An attempt's settlement, waiting for the next commit. */
export interface Queued {
  task: ClaimedTask;
  settlement: Settlement;
  terminal: boolean;
  /** A success's declared output, still at its temporary path: renamed only once this commit wins. */
  output?: OutputPaths | null;
}

export interface CommitQueueHost {
  store: RunStore;
  batch: BatchRecord;
  owner: string;
  leaseMs: number;
  maxFailures: number | null;
  observer: RunObserver;
  /** The slots to claim for now: none once the run stops (asked after failures are committed). */
  freeSlots(): PoolWorker[];
  /** Hands tasks claimed for a slot to it (the attempts in flight); `queued`: the tokens claimed as queued. */
  dispatch(worker: PoolWorker, tasks: ClaimedTask[], now: number, queued: ReadonlySet<number>): void;
  stop(reason: StopReason): void;
  /** Committed successes' outputs, put in place once their commits won. */
  placement: OutputPlacement;
}

/**
 * The settlements of ended attempts, committed in groups: with the next claim in one
 * transaction (exchange), or alone when the run ends (flush). Reports each committed attempt
 * and counts failures for --max-failures. Keeps the retries it scheduled on this process's
 * wall clock, and moves them when that clock steps (followSteps).
 */
export class CommitQueue {
  private queue: Queued[] = [];
  /** Attempts claimed as queued that have started since: written with the next claim. */
  private starts: AttemptStart[] = [];
  private failures = 0;
  private readonly steps = new WallSteps();
  /** A step seen and not yet applied (the store was busy or down). */
  private step = 0;
  /** Retries this run committed and has not claimed again, by task id: when each is due. */
  private retries = new Map<number, number>();

  constructor(private readonly host: CommitQueueHost) {}

  get size(): number {
    return this.queue.length;
  }

  /** The tasks whose settlements wait here. */
  tasks(): ClaimedTask[] {
    return this.queue.map((q) => q.task);
  }

  push(q: Queued): void {
    this.queue.push(q);
  }

  /** A queued attempt started: its task shows as running once the next tick commits this. */
  started(s: AttemptStart): void {
    this.starts.push(s);
  }

  /** Runs a commit of `batch` (taken off the queue); on failure puts it back, in order, to be committed later. */
  private async committing<T>(batch: Queued[], commit: () => Promise<T>, starts: AttemptStart[] = []): Promise<T> {
    try {
      return await commit();
    } catch (err) {
      this.queue = batch.concat(this.queue);
      this.starts = starts.concat(this.starts);
      throw err;
    }
  }

  /**
   * Commits what finished and claims for the idle workers, in one transaction. Returns the
   * claim's time when it left slots without a task (the loop then sleeps until one is due), else null.
   */
  async exchange(): Promise<number | null> {
    const { store, batch: record, owner, leaseMs } = this.host;
    // A failure may end its task and trip --max-failures, which must stop the claim: commit
    // failures on their own first. (Successes, the common case, share the claim's transaction.)
    if (this.queue.some((q) => q.settlement.outcome !== 'SUCCESS')) await this.flush();
    const free = this.host.freeSlots();
    if (this.queue.length === 0 && free.length === 0 && this.starts.length === 0) {
      await this.confirmPlaced();
      return null;
    }
    // Read before looking for a step: a step after this read leaves `now` on the clock the retries are on.
    let now = Date.now();
    while (await this.followSteps()) now = Date.now();
    const batch = this.queue;
    // A queued attempt that started and ended since the last commit is settled now: its start says nothing more.
    const ending = new Set(batch.map((q) => q.settlement.token));
    const starts = this.starts.filter((s) => !ending.has(s.token));
    this.queue = [];
    this.starts = [];
    // A worker's place behind an attempt it holds already (or behind another place claimed now) is queued.
    const places = new Map<PoolWorker, number>();
    const slots = free.map((w) => {
      const place = w.queue.length + (places.get(w) ?? 0);
      places.set(w, (places.get(w) ?? 0) + 1);
      return { workerId: w.id, pid: w.pid, queued: place > 0 };
    });
    const request = {
      batchId: record.id,
      owner,
      host: HOST,
      now,
      leaseMs,
      slots,
      started: starts,
      // The version whose handler the pool loaded: under a newer one the store claims nothing.
      jobVersion: record.jobVersion,
    };
    // Outputs put in place since the last tick are confirmed in the same transaction: no commit of their own.
    const placed = this.host.placement.take();
    const { applied, claimed } = await this.committing(batch, () => store.settleAndClaim(batch.map((q) => q.settlement), request, placed), starts).catch(
      (err: unknown) => {
        this.host.placement.restore(placed);
        throw err;
      },
    );
    const perWorker = new Map<PoolWorker, ClaimedTask[]>();
    const queued = new Set<number>();
    claimed.forEach((task, i) => {
      if (slots[i]!.queued) queued.add(task.token);
      const tasks = perWorker.get(free[i]!);
      if (tasks) tasks.push(task);
      else perWorker.set(free[i]!, [task]);
    });
    for (const task of claimed) this.retries.delete(task.id);
    for (const [worker, tasks] of perWorker) this.host.dispatch(worker, tasks, now, queued);
    await this.report(batch, new Set(applied));
    return free.length > 0 && claimed.length < free.length ? now : null;
  }

  /** Confirms the outputs put in place since the last commit, on their own (nothing else to commit). */
  async confirmPlaced(): Promise<void> {
    const placed = this.host.placement.take();
    if (placed.length === 0) return;
    try {
      await this.host.store.outputsPlaced(placed);
    } catch (err) {
      this.host.placement.restore(placed);
      throw err;
    }
  }

  /**
   * A step of this machine's wall clock (say NTP stepping it back 10 minutes) would stretch every
   * waiting backoff by the step, or (forward) end it early: the retries this run scheduled are
   * moved by the step, before anything is claimed on the new clock. A retry someone else claimed
   * or rescheduled meanwhile is left alone (the store checks each is still due when we said).
   */
  private async followSteps(): Promise<boolean> {
    this.step += this.steps.take();
    if (this.step === 0) return false;
    const step = this.step;
    if (this.retries.size > 0) {
      const moved = await this.host.store.shiftRetries([...this.retries].map(([taskId, dueAt]) => ({ taskId, dueAt })), step);
      this.retries = new Map(moved.map((r) => [r.taskId, r.dueAt]));
      if (moved.length > 0) {
        this.host.observer.note(`this machine's clock stepped ${step > 0 ? 'forward' : 'back'} ${formatMs(Math.abs(step))}; ${moved.length} waiting retr${moved.length === 1 ? 'y' : 'ies'} moved with it`);
      }
    }
    this.step = 0;
    return true;
  }

  /** Commits what finished (no claim): used when the run is ending. */
  async flush(): Promise<void> {
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    await this.report(batch, new Set(await this.committing(batch, () => this.host.store.settle(batch.map((q) => q.settlement)))));
  }

  private async report(batch: Queued[], applied: Set<number>): Promise<void> {
    if (batch.length === 0) return;
    const { store, observer } = this.host;
    await this.placeOutputs(batch, applied);
    // Whether a failure ended its task is the store's call: the budget may have changed since the claim.
    // (An interrupted attempt of a task `cancel` stopped ends it CANCELLED.)
    const failedIds = batch.filter((q) => q.settlement.outcome !== 'SUCCESS').map((q) => q.task.id);
    // Committed already: a store gone meanwhile only costs the exact status (guessed below).
    const status = await store.statuses(failedIds).catch((err: unknown) => {
      if (isUnavailable(err)) return new Map<number, TaskStatus>();
      throw err;
    });
    for (const q of batch) {
      if (!applied.has(q.settlement.token)) {
        observer.note(`attempt ${q.task.attempt} of ${q.task.key} was fenced off (its lease was taken over); its result was discarded`);
        continue;
      }
      let now = status.get(q.task.id) ?? (q.settlement.outcome === 'SUCCESS' ? 'SUCCESS' : q.terminal ? 'FAILED' : 'PENDING');
      if (now === 'RUNNING') now = 'PENDING'; // already claimed again, by another coordinator: it was a retry
      if (now === 'FAILED') this.countFailure();
      const { retryAt } = q.settlement;
      if (now === 'PENDING' && typeof retryAt === 'number') this.retries.set(q.task.id, retryAt);
      observer.attemptEnded(q.task, q.settlement, now);
    }
  }

  /**
   * Declared outputs after their commit: a winner's is renamed into place; a fenced-off
   * attempt's is removed, never renamed — unless the store records it as the success (the
   * reply of a commit that landed was lost, and the retry found its own success).
   */
  private async placeOutputs(batch: Queued[], applied: Set<number>): Promise<void> {
    const { placement } = this.host;
    const fenced = batch.filter((q) => q.output && !applied.has(q.settlement.token));
    const pending = fenced.length ? await this.host.store.pendingOutputs(this.host.batch.id).catch(() => null) : [];
    for (const q of batch) {
      if (!q.output) continue;
      if (applied.has(q.settlement.token)) placement.place(q.task.id, q.output);
      else if (pending === null) continue; // the store cannot tell now: the file stays, recovery decides
      else if (OutputPlacement.recorded(pending, q.output.temp)) placement.place(q.task.id, q.output);
      else discardOutput(q.output);
    }
  }

  private countFailure(): void {
    this.failures++;
    const { maxFailures } = this.host;
    if (maxFailures !== null && this.failures >= maxFailures) this.host.stop({ kind: 'max-failures' });
  }
}
