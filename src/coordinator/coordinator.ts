import { plural } from '../printable.js';
import { longInterval, longTimeout, type LongTimer } from '../long-timer.js';
import { prepareLogFolder } from '../store/log-layout.js';
import type { BatchRecord, ClaimedTask, ReleasedTask, Settlement, TaskStatus } from '../store/task-store.js';
import { AttemptsInFlight } from './attempts-in-flight.js';
import { CommitQueue } from './commit-queue.js';
import type { DeclaredOutputs } from './declared-outputs.js';
import { Outage, releaseLostClaims, type RunStore } from './outage.js';
import { ownerId } from '../lease-owner.js';
import type { WorkerPool } from '../pool/pool.js';
import type { RetryRules } from './settlement.js';
import { OutputPlacement } from './output-placement.js';
import { Upkeep } from './upkeep.js';

export interface CoordinatorOptions {
  /** The retry rules of a stage ('' for a batch without stages). */
  rules: (stage: string) => RetryRules;
  leaseMs: number;
  graceMs: number;
  killGraceMs: number;
  noWait: boolean;
  maxFailures: number | null;
  maxRuntimeMs: number | null;
  /** The logs root of the store's location (`logRoot`); the batch's folder is derived under it (log-layout.ts). */
  logDir: string;
  /** How often an otherwise idle coordinator looks for due retries and dead owners. */
  pollMs: number;
  /** Declared outputs: paths, up-to-date checks, what dead attempts left (declared-outputs.ts). */
  outputs: DeclaredOutputs;
  /** `--print`: where an attempt's copies of its stdout and stderr go (attempt-printer.ts), or null. */
  printPrefix: ((token: number) => string) | null;
}

export interface RunObserver {
  /** An attempt was handed to a worker (in claim order); not called for tasks settled without running. */
  attemptStarted?(task: ClaimedTask): void;
  /** `status`: the task's status once the attempt was committed (CANCELLED if `cancel` stopped it). */
  attemptEnded(task: ClaimedTask, settlement: Settlement, status: TaskStatus): void;
  released(tasks: ReleasedTask[]): void;
  note(message: string): void;
}

export type StopReason =
  | { kind: 'done' }
  | { kind: 'signal'; signal: 'SIGINT' | 'SIGTERM' }
  | { kind: 'max-failures' }
  | { kind: 'max-runtime' }
  | { kind: 'no-wait' }
  | { kind: 'paused' }
  /** Another run stored a newer job definition (updateJob): running attempts finished; follow it. */
  | { kind: 'definition-changed' };

/** How long a success may wait for others to share its tick, while every slot holds its next attempt. */
const COALESCE_MS = 2;
/**
 * How long the start of a queued attempt may wait for a tick to carry it to the store (its task
 * shows `queued` until then). Fast attempts end well within it, so their starts ride along with
 * the commits of results and cost no transaction of their own.
 */
const START_MARK_MS = 100;

/**
 * The claim → dispatch → commit loop. It alone writes the store; workers only report.
 * Outcomes arriving together are committed in one transaction with the next claim
 * (a tick runs on setImmediate, so no result waits more than one loop turn).
 */
export class Coordinator {
  readonly owner = ownerId();
  private stopping: StopReason | null = null;
  /** Set once run() has its answer: nothing may be scheduled after that. */
  private finished = false;
  private tickQueued = false;
  private ticking = false;
  private again = false;
  private wake: NodeJS.Timeout | undefined;
  private coalesce: NodeJS.Timeout | undefined;
  private startMark: NodeJS.Timeout | undefined;
  /** Every delay here may come from a user's duration (up to a year): none is a plain setTimeout. */
  private timers: LongTimer[] = [];
  private finish!: (r: StopReason) => void;
  private fail!: (err: unknown) => void;
  /** Claimed and handed to workers, until each ends. */
  private readonly attempts: AttemptsInFlight;
  /** Ended attempts' settlements, committed with the next claim. */
  private readonly commits: CommitQueue;
  /** Leases, dead owners, pause and definition changes: what keeps this run's hold on its batch valid. */
  private readonly upkeep: Upkeep;
  /** A store that is down (a server restart): attempts go on, ticks wait for its retry. */
  private readonly outage: Outage;
  /** Committed successes' declared outputs being renamed into place, and their confirmations. */
  private readonly placement: OutputPlacement;

  constructor(
    private readonly store: RunStore,
    private readonly batch: BatchRecord,
    private readonly pool: WorkerPool,
    private readonly options: CoordinatorOptions,
    private readonly observer: RunObserver,
  ) {
    // Here, before anything starts: a log folder that cannot be made safe (a symlink in the
    // way, a folder that is not ours) stops the run with nothing claimed (StoreError).
    const logFolder = prepareLogFolder(options.logDir, store.identity, batch.name);
    this.placement = new OutputPlacement((m) => observer.note(m), () => this.schedule());
    this.attempts = new AttemptsInFlight({
      pool,
      batchName: batch.name,
      logFolder,
      printPrefix: options.printPrefix,
      started: (task) => observer.attemptStarted?.(task),
      rules: options.rules,
      killGraceMs: options.killGraceMs,
      outputs: options.outputs,
      settled: (q) => this.commits.push(q),
      startedQueued: (s) => {
        this.commits.started(s);
        this.startMark ??= setTimeout(() => {
          this.startMark = undefined;
          this.schedule();
        }, START_MARK_MS);
      },
      schedule: (soon) => this.schedule(soon),
    });
    this.commits = new CommitQueue({
      store,
      batch,
      owner: this.owner,
      leaseMs: options.leaseMs,
      maxFailures: options.maxFailures,
      observer,
      freeSlots: () => (this.stopping ? [] : pool.freeSlots()),
      dispatch: (worker, tasks, now, queued) => this.attempts.dispatch(worker, tasks, now, queued),
      stop: (reason) => this.stop(reason),
      placement: this.placement,
    });
    this.upkeep = new Upkeep({
      store,
      batch,
      owner: this.owner,
      pool,
      observer,
      pollMs: options.pollMs,
      leaseMs: options.leaseMs,
      inflight: this.attempts.inflight,
      stop: (reason) => this.stop(reason),
      lost: (released) => this.lostElsewhere(released),
      // A batch without declared outputs has none to finish.
      unplaced: options.outputs.declared ? (pending) => this.placement.redo(pending) : null,
    });
    this.outage = new Outage((m) => observer.note(m));
  }

  async run(): Promise<StopReason> {
    const done = new Promise<StopReason>((resolve, reject) => {
      this.finish = (r) => {
        this.finished = true;
        resolve(r);
      };
      this.fail = (err) => {
        this.finished = true;
        reject(err);
      };
    });
    const attempts = this.attempts;
    this.pool.attach({
      done: (worker, msg) => {
        attempts.ended(msg.token, { kind: 'reported', msg, timedOut: false });
        attempts.startHead(worker, true);
      },
      dropped: (_worker, tokens, why) =>
        tokens.forEach((t) => attempts.ended(t, { kind: 'interrupted', why: this.stopping ? `taken back unstarted as the run stopped` : why })),
      exited: (_worker, running, why, queued, signal) => {
        for (const t of queued) attempts.ended(t, { kind: 'interrupted', why: `its worker died (${why}) before it started` });
        for (const t of running) attempts.ended(t, { kind: 'died', why, timedOut: false, signal });
        this.schedule();
      },
      started: (_worker, token) => attempts.started(token),
      idle: () => this.schedule(),
      // Leases are extended for every running attempt on a timer; a heartbeat is a sign of life.
      heartbeat: (token) => attempts.heartbeat(token),
      shrunk: (why) => this.observer.note(why),
    });
    const { leaseMs, maxRuntimeMs } = this.options;
    this.timers.push(longInterval(() => void this.upkeep.heartbeat().catch((err: unknown) => this.storeFailed(err)), Math.max(50, leaseMs / 3)));
    if (maxRuntimeMs !== null) this.timers.push(longTimeout(() => this.stop({ kind: 'max-runtime' }), maxRuntimeMs));
    this.schedule();
    try {
      return await done;
    } finally {
      this.timers.forEach((t) => t.cancel());
      clearTimeout(this.wake);
      clearTimeout(this.coalesce);
      clearTimeout(this.startMark);
      this.outage.cancel();
      this.pool.quiesce();
      this.killAll(); // only after a fatal error is anything still in flight
      await this.commits.flush().catch(() => undefined);
      await this.placement.settled();
      await this.commits.confirmPlaced().catch(() => undefined); // unconfirmed, the next recovery finds them in place
      await this.pool.shutdown();
    }
  }

  /** A signal or a limit: stop claiming, let running attempts finish; queued ones are given back unstarted. */
  stop(reason: StopReason): void {
    if (this.stopping) return;
    this.stopping = reason;
    this.pool.quiesce();
    this.pool.dropQueued();
    this.schedule();
  }

  /**
   * The grace is over: fire ctx.signal (module handlers) or TERM the process group (exec)
   * of every running attempt, and kill whatever still runs `killAfterMs` later. Each ends
   * INTERRUPTED: its task returns to PENDING, uncharged.
   */
  interruptAll(killAfterMs: number): void {
    this.attempts.interruptAll();
    if (this.attempts.size > 0) this.timers.push(longTimeout(() => this.killAll(), killAfterMs));
  }

  /** Kill every running attempt now and return its task to PENDING, uncharged. */
  killAll(): void {
    this.attempts.killAll();
    this.schedule();
  }

  get running(): number {
    return this.attempts.size;
  }

  /** Attempts recovery took from a dead owner: what they left at their declared outputs' temporary paths goes. */
  lostElsewhere(released: ReleasedTask[]): void {
    this.options.outputs.discardLost(released);
  }

  /**
   * Runs a tick on the next loop turn, or — when `soon` is allowed and every slot still holds
   * its next attempt — within COALESCE_MS, so one transaction carries what several attempts
   * reported meanwhile: no slot waits for it, and a commit and a claim cost per group.
   */
  private schedule(soon = false): void {
    // During an outage only the retry timer ends the wait (outcomes meanwhile just queue up).
    if (this.tickQueued || this.finished || this.outage.waiting) return;
    if (soon && !this.stopping && !this.pool.needsWork()) {
      this.coalesce ??= setTimeout(() => {
        this.coalesce = undefined;
        this.schedule();
      }, COALESCE_MS);
      return;
    }
    clearTimeout(this.coalesce);
    this.coalesce = undefined;
    this.tickQueued = true;
    setImmediate(() => void this.tick());
  }

  private async tick(): Promise<void> {
    this.tickQueued = false;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    try {
      do {
        if (this.finished) return;
        this.again = false;
        if (this.outage.active) await this.reconnected();
        if (!this.stopping) await this.upkeep.recoverIfDue();
        const unfilledAt = await this.commits.exchange();
        if (unfilledAt !== null) await this.sleepUntilDue(unfilledAt);
        await this.checkEnd();
      } while (this.again);
    } catch (err) {
      this.storeFailed(err);
    } finally {
      this.ticking = false;
    }
  }

  /**
   * A store call failed: an outage (the server restarting) is waited out with backoff, up to
   * its limit; anything else, or an outage past the limit, ends the run (exit 4 for a StoreError).
   */
  private storeFailed(err: unknown): void {
    if (this.finished) return;
    try {
      this.outage.retryLater(err, () => this.schedule());
    } catch (fatal) {
      this.fail(fatal);
    }
  }

  /**
   * The first tick after an outage: renew the leases at once (they ran on while the heartbeat
   * could not), and give back what a claim whose reply was lost left RUNNING.
   */
  private async reconnected(): Promise<void> {
    await this.upkeep.heartbeat();
    const held = [...this.attempts.inflight.values()].map((e) => e.task).concat(this.commits.tasks());
    const known = new Set(held.map((t) => t.id));
    const released = await releaseLostClaims(this.store, this.batch.id, this.owner, known);
    this.outage.recovered();
    if (released) this.observer.note(`${plural(released, 'task')} claimed as the store went down ${released === 1 ? 'was' : 'were'} given back unstarted`);
  }

  /** A claim at `now` left slots without a task: tick again when the next retry is due, or within a poll. */
  private async sleepUntilDue(now: number): Promise<void> {
    const due = await this.store.nextDueAt(this.batch.id);
    const delay = due === null ? this.options.pollMs : Math.min(Math.max(due - now, 0), this.options.pollMs);
    clearTimeout(this.wake);
    // A tick still running when the run ended must not leave a timer holding the process.
    if (!this.finished) this.wake = setTimeout(() => this.schedule(), Math.max(delay, 5));
  }

  private async checkEnd(): Promise<void> {
    if (this.attempts.size > 0 || this.commits.size > 0 || this.placement.size > 0) return;
    if (this.stopping) return this.finish(this.stopping);
    const c = await this.store.counts(this.batch.id);
    if (c.pending + c.retrying + c.running + c.queued === 0) return this.finish({ kind: 'done' });
    if (this.pool.size === 0) throw this.pool.emptyBecause ?? new Error('every worker died and none could be restarted; see the errors above');
    if (this.options.noWait && this.pool.hasIdleWorker()) {
      // Nothing claimable may only mean claims stopped for a newer definition (before a poll saw it).
      return this.finish(await this.upkeep.definitionChanged() ? { kind: 'definition-changed' } : { kind: 'no-wait' });
    }
  }
}
