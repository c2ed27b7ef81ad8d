/** The tick: check the batch, commit what ended, claim for free slots, hand out, sleep or end. */
import { plural } from '../printable.js';
import { longInterval, longTimeout, type LongTimer } from '../long-timer.js';
import { prepareLogFolder } from '../store/log-layout.js';
import type { AttemptStart, BatchMoves, BatchRecord, ClaimedTask, LostAttempt } from '../store/task-store.js';
import type { PoolWorker } from '../pool/pool.js';
import { ownerId } from '../lease-owner.js';
import { AttemptsInFlight } from './attempts-in-flight.js';
import { commitAndClaim, type Claimed } from './claim.js';
import { CommitQueue, statusesAfterCommit, type Queued } from './commit-queue.js';
import { IdlePoll } from './idle-poll.js';
import { Outage, releaseLostClaims } from './outage.js';
import { OutputPlacement, placeOthers } from './output-placement.js';
import type { CoordinatorOptions, RunObserver, RunPool, RunStore, StopReason } from './run-types.js';
import type { Ending } from './settlement.js';
import { TickTimer } from './tick-timer.js';
import { Upkeep } from './upkeep.js';

/**
 * The claim → dispatch → commit loop. It alone writes the store; workers only report.
 * Outcomes arriving together are committed in one transaction with the next claim
 * (a tick runs on setImmediate, so no result waits more than one loop turn). Its parts
 * (attempts in flight, the commit queue, the claim, upkeep, output placement) return what
 * they decided; each step of the tick below is named where it happens.
 */
export class Coordinator {
  readonly owner = ownerId();
  private stopping: StopReason | null = null;
  /** Set once run() has its answer: nothing may be scheduled after that. */
  private finished = false;
  private ticking = false;
  private again = false;
  /** When the next tick runs (tick-timer.ts). */
  private readonly ticks = new TickTimer(
    () => this.schedule(),
    () => void this.tick(),
  );
  /** Every delay here may come from a user's duration (up to a year): none is a plain setTimeout. */
  private timers: LongTimer[] = [];
  private finish!: (r: StopReason) => void;
  private fail!: (err: unknown) => void;
  /** Failures this coordinator committed that ended their task (--max-failures). */
  private failures = 0;
  /** Claimed and handed to workers, until each ends. */
  private readonly attempts: AttemptsInFlight;
  /** Ended attempts' settlements, committed with the next claim. */
  private readonly commits = new CommitQueue();
  /** Leases, dead owners, pause and definition changes: what keeps this run's hold on its batch valid. */
  private readonly upkeep: Upkeep;
  /** A store that is down (a server restart): attempts go on, ticks wait for its retry. */
  private readonly outage: Outage;
  /** Committed successes' declared outputs being renamed into place, and their confirmations. */
  private readonly placement: OutputPlacement;
  /** How long to wait after a claim that left slots empty: backs off while nothing turns up. */
  private readonly idle: IdlePoll;

  constructor(
    private readonly store: RunStore,
    private readonly batch: BatchRecord,
    private readonly pool: RunPool,
    private readonly options: CoordinatorOptions,
    private readonly observer: RunObserver,
  ) {
    // Here, before anything starts: a log folder that cannot be made safe (a symlink in the
    // way, a folder that is not ours) stops the run with nothing claimed (StoreError).
    const logFolder = prepareLogFolder(options.logDir, store.identity, batch.name);
    const note = (m: string) => observer.note(m);
    this.placement = new OutputPlacement(note, () => this.schedule());
    this.attempts = new AttemptsInFlight(pool, {
      batchName: batch.name,
      logFolder,
      printPrefix: options.printPrefix,
      rules: options.rules,
      killGraceMs: options.killGraceMs,
      outputs: options.outputs,
    });
    this.upkeep = new Upkeep(store, batch, this.owner, pool, { pollMs: options.pollMs, leaseMs: options.leaseMs }, note, (lost) => this.lostElsewhere(lost));
    this.outage = new Outage(note);
    this.idle = new IdlePoll(options.pollMs, options.leaseMs);
  }

  async run(): Promise<StopReason> {
    const { outputs } = this.options;
    // Before anything can tick: a claim must not race the renames of other batches' outputs. A
    // store down just now is the loop's to ride out (outage.ts); their outputs wait for the next run.
    const note = (m: string) => this.observer.note(m);
    if (outputs.declared) await placeOthers(this.store, this.batch.id, outputs.folders, note).catch((err: unknown) => note(`other batches' pending outputs were not looked at: ${(err as Error).message}`));
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
        this.ended(msg.token, { kind: 'reported', msg, timedOut: false });
        this.startedQueued(attempts.startHead(worker, true));
      },
      dropped: (_worker, tokens, why) =>
        tokens.forEach((t) => this.ended(t, { kind: 'interrupted', why: this.stopping ? `taken back unstarted as the run stopped` : why })),
      exited: (_worker, running, why, queued, signal) => {
        // An idle worker the OOM killer took: its kill is no attempt's.
        if (running.length === 0 && signal === 'SIGKILL') attempts.oomKills.claim();
        for (const t of queued) this.ended(t, { kind: 'interrupted', why: `its worker died (${why}) before it started` });
        for (const t of running) this.ended(t, { kind: 'died', why, timedOut: false, signal });
        this.schedule();
      },
      started: (_worker, token) => this.startedQueued(attempts.started(token)),
      idle: () => this.schedule(),
      // Leases are extended for every running attempt on a timer; a heartbeat is a sign of life.
      heartbeat: (token) => attempts.heartbeat(token),
      ran: (token) => attempts.ran(token),
      shrunk: (why) => this.observer.note(why),
    });
    const { leaseMs, maxRuntimeMs } = this.options;
    this.timers.push(longInterval(() => void this.upkeep.heartbeat(attempts.inflight).catch((err: unknown) => this.storeFailed(err)), Math.max(50, leaseMs / 3)));
    this.timers.push(longInterval(() => attempts.oomKills.forgetOld(), Math.max(1000, leaseMs / 3)));
    if (maxRuntimeMs !== null) this.timers.push(longTimeout(() => this.stop({ kind: 'max-runtime' }), maxRuntimeMs));
    this.schedule();
    try {
      return await done;
    } finally {
      this.timers.forEach((t) => t.cancel());
      this.ticks.cancel();
      this.outage.cancel();
      this.pool.quiesce();
      this.killAll(); // only after a fatal error is anything still in flight
      // A store that stayed unavailable for the outage limit gets nothing more: each call would
      // wait out its own bound (up to 30 s) past the limit. What ended here stays RUNNING under
      // this run's lease, and the next run takes it back.
      const reachable = !this.outage.active;
      if (reachable) await this.commitEnded().catch(() => undefined);
      await this.placement.settled();
      if (reachable) await this.placement.confirm(this.store).catch(() => undefined); // unconfirmed, the next recovery finds them in place
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
    this.commits.push(...this.attempts.killAll());
    this.schedule();
  }

  /** Attempts running now (SPEC §7: those queued on a slot are `queued`, never running). */
  get running(): number {
    return this.attempts.startedCount;
  }

  /** Attempts claimed and waiting on a slot behind another. */
  get queued(): number {
    return this.attempts.size - this.attempts.startedCount;
  }

  /**
   * Attempts recovery is taking from a dead owner: what they left at their declared outputs'
   * temporary paths goes. Given to recovery, which calls it before it commits the release, so
   * a crash right after the commit leaves nothing behind (recoverStale).
   */
  lostElsewhere(lost: LostAttempt[]): void {
    this.options.outputs.discardLost(lost);
  }

  /** Asks for a tick; `soon`: a success, which may wait a moment for others to share its commit (tick-timer.ts). */
  private schedule(soon = false): void {
    // During an outage only the retry timer ends the wait (outcomes meanwhile just queue up).
    if (this.finished || this.outage.waiting) return;
    this.ticks.next(soon && !this.stopping && !this.pool.needsWork());
  }

  private async tick(): Promise<void> {
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
        if (!this.stopping) await this.checkBatch();
        // A failure may end its task and trip --max-failures, which must stop the claim: failures
        // are committed on their own first. (Successes, the common case, share the claim's transaction.)
        if (this.commits.hasFailures) await this.commitEnded();
        const unfilledAt = await this.claimForFreeSlots();
        // Only a tick whose writes went through ends an outage: a primary being demoted answers
        // reads and refuses every write (R47), and a read alone would end it after every retry.
        this.outage.recovered();
        const moves = await this.checkEnd();
        if (unfilledAt !== null && !this.finished) await this.sleepUntilDue(unfilledAt, moves);
      } while (this.again);
    } catch (err) {
      this.storeFailed(err);
    } finally {
      this.ticking = false;
    }
  }

  /** Check the batch, at most once a poll: dead owners' tasks back, unfinished renames redone, pause and newer definitions. */
  private async checkBatch(): Promise<void> {
    const found = await this.upkeep.checkBatch();
    if (!found) return;
    if (found.released.length) {
      this.idle.found();
      this.observer.released(found.released);
    }
    // A crash (here or on another host) between a success's commit and its output's rename.
    if (this.options.outputs.declared) this.placement.redo(await this.store.pendingOutputs(this.batch.id));
    if (found.stop) this.stop(found.stop);
  }

  /** Commit what ended, alone (no claim): failures, and what is left when the run ends. */
  private async commitEnded(): Promise<void> {
    const ended = this.commits.takeEnded();
    if (ended.length === 0) return;
    let applied: number[];
    try {
      applied = await this.store.settle(ended.map((q) => q.settlement));
    } catch (err) {
      this.commits.restore(ended);
      throw err;
    }
    await this.reportCommitted(ended, new Set(applied));
  }

  /**
   * Commit what ended and claim for the free slots, in one transaction; hand out what was
   * claimed. Returns the claim's time when it left slots without a task (the loop then sleeps
   * until one is due), else null.
   */
  private async claimForFreeSlots(): Promise<number | null> {
    const free = this.stopping ? [] : this.pool.freeSlots();
    if (this.commits.empty && free.length === 0) {
      await this.placement.confirm(this.store);
      return null;
    }
    // Read before looking for a step: a step after this read leaves `now` on the clock the retries are on.
    let now = Date.now();
    while (await this.followClockSteps()) now = Date.now();
    const { ended, starts } = this.commits.take();
    // Outputs put in place since the last tick are confirmed in the same transaction: no commit of their own.
    const placed = this.placement.take();
    let claimed: Claimed;
    try {
      claimed = await commitAndClaim({ store: this.store, batch: this.batch, owner: this.owner, leaseMs: this.options.leaseMs, now, free, ended, starts, placed });
    } catch (err) {
      this.commits.restore(ended, starts);
      this.placement.restore(placed);
      throw err;
    }
    // The run gave up at the outage limit while this claim waited: what it claimed is never
    // started here; it stays RUNNING under this run's lease for the next run to take back.
    if (this.finished) return null;
    if (claimed.handOut.size > 0) this.idle.found();
    for (const tasks of claimed.handOut.values()) this.commits.claimed(tasks);
    for (const [worker, tasks] of claimed.handOut) this.handOut(worker, tasks, now, claimed.queued);
    await this.reportCommitted(ended, claimed.applied);
    return claimed.unfilled ? now : null;
  }

  /** Hand claimed tasks to their worker; those that must not run are settled for the next commit. */
  private handOut(worker: PoolWorker, tasks: ClaimedTask[], now: number, queued: ReadonlySet<number>): void {
    const prepared = this.attempts.prepare(worker, tasks, now, queued);
    this.commits.push(...prepared.settled);
    for (const task of prepared.started) this.observer.attemptStarted?.(task);
    // Settled here without running (up to date): committed by the next tick, which claims again.
    if (prepared.settled.length) this.schedule();
    this.startedQueued(this.attempts.send(worker, prepared.messages));
  }

  /**
   * After a commit: put winners' outputs in place, say how each attempt's task stands, count
   * the failures that ended a task (--max-failures), and keep the retries it scheduled.
   */
  private async reportCommitted(ended: Queued[], applied: ReadonlySet<number>): Promise<void> {
    if (ended.length === 0) return;
    await this.placement.afterCommit(this.store, this.batch.id, ended, applied);
    for (const { q, status } of await statusesAfterCommit(this.store, ended, applied)) {
      if (status === null) {
        this.observer.note(`attempt ${q.task.attempt} of ${q.task.key} was fenced off (its lease was taken over); its result was discarded`);
        continue;
      }
      if (status === 'FAILED') this.countFailure();
      this.commits.retrying(q, status);
      this.observer.attemptEnded(q.task, q.settlement, status);
    }
  }

  private countFailure(): void {
    this.failures++;
    const { maxFailures } = this.options;
    if (maxFailures !== null && this.failures >= maxFailures) this.stop({ kind: 'max-failures' });
  }

  /** An attempt ended: its settlement waits for the next commit. A success may wait a moment for others to share it. */
  private ended(token: number, ending: Ending): void {
    const q = this.attempts.ended(token, ending);
    if (!q) return;
    this.commits.push(q);
    // Anything but a success may stop the run (--max-failures) or retry, and is committed at once.
    this.schedule(ending.kind === 'reported' && ending.msg.ok);
  }

  /** An attempt claimed as queued started: the store is told with the next commit (tick-timer.ts). */
  private startedQueued(start: AttemptStart | null): void {
    if (!start) return;
    this.commits.started(start);
    this.ticks.carryStart();
  }

  /** Whether this machine's wall clock stepped (its waiting retries were moved with it). */
  private async followClockSteps(): Promise<boolean> {
    const said = await this.commits.followSteps(this.store);
    if (said === null) return false;
    if (said) this.observer.note(said);
    return true;
  }

  /**
   * A store call failed: an outage (the server restarting) is waited out with backoff, up to
   * its limit; anything else, or an outage past the limit, ends the run (exit 4 for a StoreError).
   */
  private storeFailed(err: unknown): void {
    if (this.finished) return;
    try {
      this.outage.retryLater(
        err,
        () => this.schedule(),
        (pastLimit) => {
          if (!this.finished) this.fail(pastLimit);
        },
      );
    } catch (fatal) {
      this.fail(fatal);
    }
  }

  /**
   * Each tick during an outage, before its claim: renew the leases at once (they ran on while
   * the heartbeat could not), and give back what a claim whose reply was lost left RUNNING.
   */
  private async reconnected(): Promise<void> {
    await this.upkeep.heartbeat(this.attempts.inflight);
    const held = [...this.attempts.inflight.values()].map((e) => e.task).concat(this.commits.tasks());
    const known = new Set(held.map((t) => t.id));
    const released = await releaseLostClaims(this.store, this.batch.id, this.owner, known);
    if (released) this.observer.note(`${plural(released, 'task')} claimed as the store went down ${released === 1 ? 'was' : 'were'} given back unstarted`);
  }

  /**
   * A claim at `now` left slots without a task: tick again when the next retry is due, or within
   * a poll that backs off while the batch stands still (`moves`, when this tick looked: no
   * outcome committed since the last look; idle-poll.ts).
   */
  private async sleepUntilDue(now: number, moves: BatchMoves | null): Promise<void> {
    const due = await this.store.nextDueAt(this.batch.id);
    const poll = this.idle.next(this.upkeep.watchful, moves && String(moves.lastFinishedAt));
    const delay = due === null ? poll : Math.min(Math.max(due - now, 0), poll);
    // A tick still running when the run ended must not leave a timer holding the process.
    if (!this.finished) this.ticks.wakeIn(delay);
  }

  /**
   * The run is over when nothing is in flight or waiting and the batch has no work left (or it
   * stops). Returns how the batch stands when it looked (nothing of this run's in flight).
   */
  private async checkEnd(): Promise<BatchMoves | null> {
    if (this.attempts.size > 0 || this.commits.size > 0 || this.placement.size > 0) return null;
    if (this.stopping) {
      this.finish(this.stopping);
      return null;
    }
    // Index lookups, not counts: an idle host looks at this every poll, on batches of any size.
    const c = await this.store.progress(this.batch.id);
    if (!c.unfinished) {
      this.finish({ kind: 'done' });
      return c;
    }
    if (this.pool.size === 0) throw this.pool.emptyBecause ?? new Error('every worker died and none could be restarted; see the errors above');
    // An owner whose lease passed is watched for a lease before its tasks are taken (renewal-watch.ts): a --no-wait run stays for that.
    if (this.options.noWait && this.pool.hasIdleWorker() && !this.upkeep.watching) {
      // Nothing claimable may only mean claims stopped for a newer definition (before a poll saw it).
      this.finish((await this.upkeep.definitionChanged()) ? { kind: 'definition-changed' } : { kind: 'no-wait' });
    } else if (this.placement.stuck && (await this.waitsOnOutputsOnly())) this.finish({ kind: 'outputs-pending' });
    return c;
  }

  /**
   * A rename failed (EXDEV, EROFS: it fails again every poll): whether all that is left waits
   * on it — nothing due, nothing running on any host — so the run ends (exit 3) rather than
   * wait for a disk that may never change. A rare path: only then are the batch's tasks counted.
   */
  private async waitsOnOutputsOnly(): Promise<boolean> {
    if ((await this.store.nextDueAt(this.batch.id)) !== null) return false;
    const c = await this.store.counts(this.batch.id);
    return c.running + c.queued === 0;
  }
}
