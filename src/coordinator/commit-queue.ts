/** Ended attempts waiting for the next commit, and the retries this run scheduled on its own clock. */
import type { AttemptStart, ClaimedTask, Settlement, TaskStatus } from '../store/task-store.js';
import { formatMs } from '../job/units.js';
import { WallSteps } from '../wall-steps.js';
import type { OutputPaths } from '../output/output-path.js';
import type { PrintedAs, RunStore } from './run-types.js';

/** An attempt's settlement, waiting for the next commit. */
export interface Queued {
  task: ClaimedTask;
  settlement: Settlement;
  terminal: boolean;
  /** A success's declared output, still at its temporary path: renamed only once this commit wins. */
  output?: OutputPaths | null;
  /** An item of a group: the command its output came from (RunObserver.attemptEnded). */
  printed?: PrintedAs;
}

/**
 * The settlements of ended attempts, committed in groups: with the next claim in one
 * transaction, or alone (failures, and when the run ends). What a commit fails to write is
 * put back, in order, for the next. Keeps the retries it committed on this process's wall
 * clock, and moves them when that clock steps (followSteps).
 */
export class CommitQueue {
  private queue: Queued[] = [];
  /** Attempts claimed as queued that have started since: written with the next claim. */
  private starts: AttemptStart[] = [];
  private readonly steps = new WallSteps();
  /** A step seen and not yet applied (the store was busy or down). */
  private step = 0;
  /** Retries this run committed and has not claimed again, by task id: when each is due. */
  private retries = new Map<number, number>();

  get size(): number {
    return this.queue.length;
  }

  /** Nothing to commit: no settlement, no start. */
  get empty(): boolean {
    return this.queue.length === 0 && this.starts.length === 0;
  }

  /** Whether a settlement waits that is not a success (it may end its task, and trip --max-failures). */
  get hasFailures(): boolean {
    return this.queue.some((q) => q.settlement.outcome !== 'SUCCESS');
  }

  /** The tasks whose settlements wait here. */
  tasks(): ClaimedTask[] {
    return this.queue.map((q) => q.task);
  }

  push(...q: Queued[]): void {
    this.queue.push(...q);
  }

  /** A queued attempt started: its task shows as running once the next tick commits this. */
  started(s: AttemptStart): void {
    this.starts.push(s);
  }

  /** Takes every settlement, and the starts that still say something (not those of attempts ending now). */
  take(): { ended: Queued[]; starts: AttemptStart[] } {
    const ended = this.queue;
    const ending = new Set(ended.map((q) => q.settlement.token));
    const starts = this.starts.filter((s) => !ending.has(s.token));
    this.queue = [];
    this.starts = [];
    return { ended, starts };
  }

  /** Takes the settlements alone (the starts wait for the next claim). */
  takeEnded(): Queued[] {
    const ended = this.queue;
    this.queue = [];
    return ended;
  }

  /** A commit of what `take` gave failed: it goes back ahead of what came since. */
  restore(ended: Queued[], starts: AttemptStart[] = []): void {
    this.queue = ended.concat(this.queue);
    this.starts = starts.concat(this.starts);
  }

  /** Tasks claimed again: no retry of theirs waits any more. */
  claimed(tasks: ClaimedTask[]): void {
    for (const task of tasks) this.retries.delete(task.id);
  }

  /** A committed attempt's task is back to PENDING with a retry due then: the clock-step watch keeps it. */
  retrying(q: Queued, status: TaskStatus): void {
    const { retryAt } = q.settlement;
    if (status === 'PENDING' && typeof retryAt === 'number') this.retries.set(q.task.id, retryAt);
  }

  /**
   * The time to claim at, on the clock the retries are on: read before looking for a step (a
   * step after the read leaves it on that clock), and read again after each step followed.
   */
  async clockNow(store: RunStore, note: (message: string) => void): Promise<number> {
    for (;;) {
      const now = Date.now();
      const said = await this.followSteps(store);
      if (said === null) return now;
      if (said) note(said);
    }
  }

  /**
   * A step of this machine's wall clock (say NTP stepping it back 10 minutes) would stretch every
   * waiting backoff by the step, or (forward) end it early: the retries this run scheduled are
   * moved by the step, before anything is claimed on the new clock. A retry someone else claimed
   * or rescheduled meanwhile is left alone (the store checks each is still due when we said).
   * Returns null when the clock did not step, else what to say ('' for nothing).
   */
  async followSteps(store: RunStore): Promise<string | null> {
    this.step += this.steps.take();
    if (this.step === 0) return null;
    const step = this.step;
    let said = '';
    if (this.retries.size > 0) {
      const moved = await store.shiftRetries([...this.retries].map(([taskId, dueAt]) => ({ taskId, dueAt })), step);
      this.retries = new Map(moved.map((r) => [r.taskId, r.dueAt]));
      if (moved.length > 0) {
        said = `this machine's clock stepped ${step > 0 ? 'forward' : 'back'} ${formatMs(Math.abs(step))}; ${moved.length} waiting retr${moved.length === 1 ? 'y' : 'ies'} moved with it`;
      }
    }
    this.step = 0;
    return said;
  }
}
