/** The tick: check the batch, commit what ended, claim for free places, hand out, sleep or end. */
import { spacingOf } from '../job/rate.js';
import { plural } from '../printable.js';
import { prepareLogFolder } from '../store/log-layout.js';
import type { BatchMoves, BatchRecord, ClaimedTask, LostAttempt, TaskStatus } from '../store/task-store.js';
import type { PoolWorker } from '../pool/pool.js';
import { ownerId } from '../lease-owner.js';
import { AttemptsInFlight } from './attempts-in-flight.js';
import { appliedOf, claimRound } from './claim.js';
import { CommitQueue, type Queued } from './commit-queue.js';
import { FlowLimits } from './flow-limits.js';
import { IdlePoll } from './idle-poll.js';
import { Outage, releaseLostClaims } from './outage.js';
import { OutputPlacement, placeOthers } from './output-placement.js';
import { poolEndings, type PoolNews } from './pool-endings.js';
import { runEnd } from './run-end.js';
import type { CoordinatorOptions, RunObserver, RunPool, RunStore, StopReason } from './run-types.js';
import { TickRunner } from './tick-runner.js';
import { Upkeep } from './upkeep.js';

/**
 * The claim → dispatch → commit loop. It alone writes the store; workers only report. Outcomes
 * arriving together are committed in one transaction with the next claim. When ticks run, and
 * every timer, is the tick runner's; what the pool reports arrives as news (pool-endings.ts). Its
 * parts return what they decided; each step of the tick below is named where it happens.
 */
export class Coordinator {
  readonly owner = ownerId();
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
  /** When ticks run, one at a time; the run's flags and timers, and its end. */
  private readonly runner: TickRunner;
  /** Committed successes' declared outputs being renamed into place, and their confirmations. */
  private readonly placement: OutputPlacement;
  /** How long to wait after a claim that left places empty: backs off while nothing turns up. */
  private readonly idle: IdlePoll;
  /** --rate, `set -j N` and --adaptive as stored now (followed at each check of the batch). */
  private readonly flow: FlowLimits;
  /** When the rate's gate lets the next attempt start, if a claim got fewer than it wanted. */
  private rateWakeAt: number | null = null;

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
    this.placement = new OutputPlacement(note, () => this.runner.request());
    const { printPrefix, rules, killGraceMs, outputs, pollMs, leaseMs } = options;
    this.attempts = new AttemptsInFlight(pool, { batchName: batch.name, logFolder, printPrefix, rules, killGraceMs, outputs, stopping: () => this.runner.stopping !== null });
    this.upkeep = new Upkeep(store, batch, this.owner, pool, { pollMs, leaseMs }, note, (lost) => this.discardLostOutputs(lost));
    this.outage = new Outage(note);
    this.runner = new TickRunner({ tick: () => this.tick(), mayCoalesce: () => !pool.needsWork() }, this.outage);
    this.idle = new IdlePoll(pollMs, leaseMs);
    this.flow = new FlowLimits({ rate: options.rate, rateKey: options.rateKey ?? false, limit: options.limit, adaptive: options.adaptive ?? false }, options.slots ?? 1, note);
  }

  async run(): Promise<StopReason> {
    const { outputs, leaseMs, maxRuntimeMs } = this.options;
    // Before anything can tick: a claim must not race the renames of other batches' outputs. A
    // store down just now is the loop's to ride out (outage.ts); their outputs wait for the next run.
    const note = (m: string) => this.observer.note(m);
    if (outputs.declared) await placeOthers(this.store, this.batch.id, outputs.folders, note).catch((err: unknown) => note(`other batches' pending outputs were not looked at: ${(err as Error).message}`));
    const attempts = this.attempts;
    this.pool.attach(poolEndings(attempts, () => this.runner.stopping !== null, (news) => this.take(news)));
    this.runner.every(Math.max(50, leaseMs / 3), () => void this.upkeep.heartbeat(attempts.inflight).catch((err: unknown) => this.runner.failed(err)));
    this.runner.every(Math.max(1000, leaseMs / 3), () => attempts.oomKills.forgetOld());
    // A look at the batch each poll while attempts run, ended or not: `set -j` above the pool and
    // --adaptive's level are seen (and the level refreshed) though no place comes free.
    this.runner.every(this.options.pollMs, () => attempts.size > 0 && this.runner.request());
    if (maxRuntimeMs !== null) this.runner.after(maxRuntimeMs, () => this.stop({ kind: 'max-runtime' }));
    this.runner.request();
    try {
      return await this.runner.done;
    } finally {
      this.runner.cancel();
      this.pool.quiesce();
      this.killAll(); // only after a fatal error is anything still in flight
      // A store that stayed unavailable for the outage limit gets nothing more: each call would
      // wait out its own bound (up to 30 s) past the limit. What ended here stays RUNNING under
      // this run's lease, and the next run takes it back.
      const reachable = !this.outage.active;
      if (reachable) await this.commitEnded().catch(() => undefined);
      if (reachable) await this.flow.publish(this.store, this.batch.id, this.owner, Date.now(), true).catch(() => undefined);
      await this.placement.settled();
      if (reachable) await this.placement.confirm(this.store).catch(() => undefined); // unconfirmed, the next recovery finds them in place
      await this.pool.shutdown();
    }
  }

  /** A signal or a limit: stop claiming, let running attempts finish; queued ones are given back unstarted. */
  stop(reason: StopReason): void {
    if (this.runner.stopping) return;
    this.runner.stopping = reason;
    this.pool.quiesce();
    this.pool.dropQueued();
    this.runner.request();
  }

  /** The grace is over: stop every running attempt (ctx.signal, TERM), kill what still runs `killAfterMs` later; each ends INTERRUPTED. */
  interruptAll(killAfterMs: number): void {
    this.attempts.interruptAll();
    if (this.attempts.size > 0) this.runner.after(killAfterMs, () => this.killAll());
  }

  /** Kill every running attempt now and return its task to PENDING, uncharged. */
  killAll(): void {
    this.commits.push(...this.attempts.killAll());
    this.runner.request();
  }

  /** Attempts running now (SPEC §7: those queued on a worker are `queued`, never running). */
  get running(): number {
    return this.attempts.startedCount;
  }

  /** Attempts claimed and waiting on a worker behind another. */
  get queued(): number {
    return this.attempts.size - this.attempts.startedCount;
  }

  /** Recovery took these attempts from a dead owner: what they left at their outputs' temporary paths goes, before the release commits (recoverStale). */
  discardLostOutputs(lost: LostAttempt[]): void {
    this.options.outputs.discardLost(lost);
  }

  /** One tick: the batch checked, failures committed, the claim, and then the end or a sleep until something is due. */
  private async tick(): Promise<void> {
    if (this.outage.active) await this.reconnected();
    if (!this.runner.stopping) await this.checkBatch();
    // A failure may end its task and trip --max-failures, which must stop the claim: failures
    // are committed on their own first. (Successes, the common case, share the claim's transaction.)
    if (this.commits.hasFailures) await this.commitEnded();
    const unfilledAt = await this.claimForFreePlaces();
    // Only a tick whose writes went through ends an outage: a primary being demoted answers
    // reads and refuses every write (R47), and a read alone would end it after every retry.
    this.outage.recovered();
    // The run is over when nothing is in flight or waiting and the batch has no work left, or it stops (run-end.ts).
    const busy = this.attempts.size > 0 || this.commits.size > 0 || this.placement.size > 0;
    const { store, batch, pool, upkeep, options, runner } = this;
    const { end, moves } = await runEnd({ busy, stopping: runner.stopping, store, batchId: batch.id, pool, upkeep, noWait: options.noWait, outputsStuck: this.placement.stuck });
    if (end) runner.finish(end);
    if (unfilledAt !== null && !runner.over) await this.sleepUntilDue(unfilledAt, moves);
    // Places left free by the rate: a tick when the gate lets the next start, and within a poll
    // (a slow rate must not keep the run from seeing a pause or a new rate).
    if (this.rateWakeAt !== null && !runner.over && !runner.stopping) runner.wakeIn(Math.min(this.rateWakeAt - Date.now(), options.pollMs));
  }

  /** What the pool reported, as the tick takes it (pool-endings.ts). */
  private take(news: PoolNews): void {
    if (news.kind === 'ended') {
      // --adaptive counts the attempt (one command or call, however many items), beside the workers running one.
      const running = this.flow.adaptive ? this.pool.busyWorkers() : 0;
      const { settled, again } = this.attempts.ended(news.token, news.ending);
      if (settled.length && this.flow.adaptive) this.flow.ended(settled.map((q) => q.settlement), Math.max(running, this.pool.busyWorkers() + 1));
      // A group that failed as a whole: its halves run on its worker, after what it holds already.
      if (again) this.take({ kind: 'started', starts: this.attempts.send(again.worker, again.messages) });
      if (settled.length === 0) return;
      this.commits.push(...settled);
      // Anything but a success may stop the run (--max-failures) or retry, and is committed at once.
      this.runner.request(news.ending.kind === 'reported' && news.ending.msg.ok && !news.ending.msg.items?.some((i) => !i.ok));
    } else if (news.kind === 'started') {
      if (news.starts.length === 0) return;
      // Claimed as queued: the store is told with the next commit.
      for (const start of news.starts) this.commits.started(start);
      this.runner.carryStart();
    } else if (news.kind === 'wake') this.runner.request();
    else this.observer.note(news.message);
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
    const widen = this.flow.follow(found);
    if (widen !== null) await this.widen(widen);
    await this.flow.publish(this.store, this.batch.id, this.owner, Date.now());
  }

  /** `splitdance set -j N` above the pool's size: up to N workers, no more than the batch's open work (as a run starts). */
  private async widen(size: number): Promise<void> {
    const c = await this.store.counts(this.batch.id);
    const open = c.pending + c.retrying + c.running + c.queued;
    this.pool.widen(size);
    this.flow.widened(size);
    this.observer.note(`the batch was given \`splitdance set -j ${size}\`: up to ${size} running at once here`);
    void this.pool.grow(open).then((m) => m && this.observer.note(m));
  }

  /** Commit what ended, alone (no claim): failures, and what is left when the run ends. */
  private async commitEnded(): Promise<void> {
    const ended = this.commits.takeEnded();
    if (ended.length === 0) return;
    const applied = await this.store.settle(ended.map((q) => q.settlement)).catch((err: unknown) => {
      this.commits.restore(ended);
      throw err;
    });
    await this.reportCommitted(ended, appliedOf(applied));
  }

  /** Commit what ended and claim for the free places in one transaction, and hand out; returns the claim's time if it left places empty. */
  private async claimForFreePlaces(): Promise<number | null> {
    let free = this.runner.stopping ? [] : this.pool.freePlaces();
    this.rateWakeAt = null;
    // A rate, `set -j N` or --adaptive: idle workers only (none queues behind another), and no more running than the cap.
    if (this.flow.holds) free = free.filter((w, i) => w.queue.length === 0 && free.indexOf(w) === i);
    const cap = this.flow.cap;
    if (cap !== null) free = free.slice(0, Math.max(0, cap - this.pool.busyWorkers()));
    if (this.commits.empty && free.length === 0) {
      await this.placement.confirm(this.store);
      return null;
    }
    const now = await this.commits.clockNow(this.store, (m) => this.observer.note(m));
    // --adaptive's pace first (this run's own gate): the batch's gate is asked only for starts it will use.
    const paced = this.flow.paced(free.length, now);
    if (paced.wakeAt !== null) this.rateWakeAt = paced.wakeAt;
    free = free.slice(0, paced.granted);
    const rate = this.flow.rate;
    // --rate-key: the store's key gates, in the claim itself (one start per key's turn).
    const keyed = this.flow.keyed ? spacingOf(this.flow.keyed) : undefined;
    if (rate && free.length > 0) {
      // --rate: a start for each place, from the batch's gate in the store (every host's), at
      // the claim's own time. Only idle workers' first places (above): an attempt queued behind
      // another would start later than its claim, and a few such could start at once.
      const { spacingMs, burst } = spacingOf(rate);
      const gate = await this.store.takeStarts(this.batch.id, free.length, now, spacingMs, burst);
      if (gate.granted < free.length) this.rateWakeAt = Math.min(this.rateWakeAt ?? Number.POSITIVE_INFINITY, gate.wakeAt);
      free = free.slice(0, gate.granted);
    }
    if (this.commits.empty && free.length === 0) return null;
    const { store, batch, owner } = this;
    const shape = this.pool.groups.claimShape();
    const { claimed, ended } = await claimRound({ store, batch, owner, leaseMs: this.options.leaseMs, now, free, shape, keyed }, this.commits, this.placement);
    // The run gave up at the outage limit while this claim waited: what it claimed is never
    // started here; it stays RUNNING under this run's lease for the next run to take back.
    if (this.runner.over) return null;
    if (claimed.handOut.size > 0) this.idle.found();
    for (const places of claimed.handOut.values()) for (const tasks of places) this.commits.claimed(tasks);
    for (const [worker, places] of claimed.handOut) this.handOut(worker, places, now, claimed.queued);
    await this.reportCommitted(ended, claimed.applied);
    // Places left free while keys wait for their gates: a tick when the first opens (claims
    // in between would find the same keys closed).
    if (claimed.unfilled && keyed) {
      const opens = await store.keyGateOpensAt(batch.id, now);
      if (opens !== null) this.rateWakeAt = Math.min(this.rateWakeAt ?? Number.POSITIVE_INFINITY, opens);
    }
    return claimed.unfilled ? now : null;
  }

  /** Hand claimed tasks to their worker; those that must not run are settled for the next commit. */
  private handOut(worker: PoolWorker, places: ClaimedTask[][], now: number, queued: ReadonlySet<number>): void {
    const prepared = this.attempts.prepare(worker, places, now, queued);
    this.commits.push(...prepared.settled);
    for (const task of prepared.started) this.observer.attemptStarted?.(task);
    // Settled here without running (up to date): committed by the next tick, which claims again.
    if (prepared.settled.length) this.runner.request();
    this.take({ kind: 'started', starts: this.attempts.send(worker, prepared.messages) });
  }

  /** After a commit: winners' outputs put in place, each task's status as the commit left it told, failures counted, retries kept. */
  private async reportCommitted(ended: Queued[], applied: ReadonlyMap<number, TaskStatus>): Promise<void> {
    if (ended.length === 0) return;
    await this.placement.afterCommit(this.store, this.batch.id, ended, applied);
    for (const q of ended) {
      const status = applied.get(q.settlement.token);
      if (status === undefined) {
        this.observer.note(`attempt ${q.task.attempt} of ${q.task.key} was fenced off (its lease was taken over); its result was discarded`);
        continue;
      }
      const { maxFailures } = this.options;
      if (status === 'FAILED' && maxFailures !== null && ++this.failures >= maxFailures) this.stop({ kind: 'max-failures' });
      this.commits.retrying(q, status);
      this.observer.attemptEnded(q.task, q.settlement, status, q.printed);
    }
  }

  /** Each tick during an outage: leases renewed at once, and what a claim whose reply was lost left RUNNING given back. */
  private async reconnected(): Promise<void> {
    await this.upkeep.heartbeat(this.attempts.inflight);
    const held = [...this.attempts.inflight.values()].map((e) => e.task).concat(this.commits.tasks());
    const released = await releaseLostClaims(this.store, this.batch.id, this.owner, new Set(held.map((t) => t.id)));
    if (released) this.observer.note(`${plural(released, 'task')} claimed as the store went down ${released === 1 ? 'was' : 'were'} given back unstarted`);
  }

  /** A claim at `now` left places empty: tick when the next retry is due, or within a poll that backs off while the batch stands still (idle-poll.ts). */
  private async sleepUntilDue(now: number, moves: BatchMoves | null): Promise<void> {
    const due = await this.store.nextDueAt(this.batch.id);
    const poll = this.idle.next(this.upkeep.watchful, moves && String(moves.lastFinishedAt));
    this.runner.wakeIn(due === null ? poll : Math.min(Math.max(due - now, 0), poll));
  }
}
