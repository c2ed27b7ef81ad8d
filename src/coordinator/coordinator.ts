import { longInterval, longTimeout, type LongTimer } from '../long-timer.js';
import { attemptLogFile, prepareLogFolder } from '../store/log-layout.js';
import type { BatchRecord, ClaimedTask, ReleasedTask, Settlement, TaskStatus } from '../store/task-store.js';
import { discardOutput } from '../output/commit-output.js';
import type { OutputPaths } from '../output/output-path.js';
import type { DoneMessage, TaskMessage } from '../worker/protocol.js';
import { resultWithOut, type DeclaredOutputs } from './declared-outputs.js';
import { Outage, isUnavailable, releaseLostClaims, type RunStore } from './outage.js';
import { HOST, ownerId } from './owner.js';
import type { PoolWorker, WorkerPool } from './pool.js';
import { settle, type Ending, type RetryRules, type TimedOut } from './settlement.js';
import { SilenceWatch } from './silence-watch.js';
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
}

export interface RunObserver {
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

interface Inflight {
  task: ClaimedTask;
  worker: PoolWorker;
  /** Whether it has started (the others wait in its worker's queue, or its launcher's). */
  head: boolean;
  /** When it started running; until then, when it was claimed. */
  startedAt: number;
  /** It waited queued behind another attempt on its worker before it started. */
  waited: boolean;
  /** Stopped by the coordinator: by --timeout, or by --heartbeat-timeout. */
  timedOut: TimedOut;
  /** --heartbeat-timeout's watch, once it started (also in `timers`). */
  silence?: SilenceWatch;
  /** Its declared output's paths (null without one). */
  output: OutputPaths | null;
  /** Stopped by a shutdown: however it ends, it is INTERRUPTED (not charged). */
  interrupted: boolean;
  timers: { cancel(): void }[];
}

interface Queued {
  task: ClaimedTask;
  settlement: Settlement;
  terminal: boolean;
}

/**
 * The claim → dispatch → commit loop. It alone writes the store; workers only report.
 * Outcomes arriving together are committed in one transaction with the next claim
 * (a tick runs on setImmediate, so no result waits more than one loop turn).
 */
/** How long a success may wait for others to share its tick, while every slot holds its next attempt. */
const COALESCE_MS = 2;

export class Coordinator {
  readonly owner = ownerId();
  private readonly inflight = new Map<number, Inflight>();
  private queue: Queued[] = [];
  private stopping: StopReason | null = null;
  /** Set once run() has its answer: nothing may be scheduled after that. */
  private finished = false;
  private failures = 0;
  private tickQueued = false;
  private ticking = false;
  private again = false;
  private wake: NodeJS.Timeout | undefined;
  private coalesce: NodeJS.Timeout | undefined;
  /** Every delay here may come from a user's duration (up to a year): none is a plain setTimeout. */
  private timers: LongTimer[] = [];
  private finish!: (r: StopReason) => void;
  private fail!: (err: unknown) => void;
  /** This store's folder for this batch's logs. */
  private readonly logFolder: string;
  /** Leases, dead owners, pause and definition changes: what keeps this run's hold on its batch valid. */
  private readonly upkeep: Upkeep;
  /** A store that is down (a server restart): attempts go on, ticks wait for its retry. */
  private readonly outage: Outage;

  constructor(
    private readonly store: RunStore,
    private readonly batch: BatchRecord,
    private readonly pool: WorkerPool,
    private readonly options: CoordinatorOptions,
    private readonly observer: RunObserver,
  ) {
    // Here, before anything starts: a log folder that cannot be made safe (a symlink in the
    // way, a folder that is not ours) stops the run with nothing claimed (StoreError).
    this.logFolder = prepareLogFolder(options.logDir, store.identity, batch.name);
    this.upkeep = new Upkeep({
      store,
      batch,
      owner: this.owner,
      pool,
      observer,
      pollMs: options.pollMs,
      leaseMs: options.leaseMs,
      inflight: this.inflight,
      stop: (reason) => this.stop(reason),
      lost: (released) => this.lostElsewhere(released),
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
    this.pool.attach({
      done: (worker, msg) => {
        this.ended(msg.token, { kind: 'reported', msg, timedOut: false });
        this.startHead(worker, true);
      },
      dropped: (_worker, tokens, why) =>
        tokens.forEach((t) => this.ended(t, { kind: 'interrupted', why: this.stopping ? `taken back unstarted as the run stopped` : why })),
      exited: (_worker, running, why, queued, signal) => {
        for (const t of queued) this.ended(t, { kind: 'interrupted', why: `its worker died (${why}) before it started` });
        for (const t of running) this.ended(t, { kind: 'died', why, timedOut: false, signal });
        this.schedule();
      },
      started: (_worker, token) => this.started(token),
      idle: () => this.schedule(),
      // Leases are extended for every running attempt on a timer; a heartbeat is a sign of life.
      heartbeat: (token) => this.inflight.get(token)?.silence?.sign(),
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
      this.outage.cancel();
      this.pool.quiesce();
      this.killAll(); // only after a fatal error is anything still in flight
      await this.flush().catch(() => undefined);
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
    const workers = new Set<PoolWorker>();
    for (const entry of this.inflight.values()) {
      entry.interrupted = true;
      workers.add(entry.worker);
    }
    for (const w of workers) this.pool.interrupt(w); // also drops its queued attempts
    if (this.inflight.size > 0) this.timers.push(longTimeout(() => this.killAll(), killAfterMs));
  }

  /** Kill every running attempt now and return its task to PENDING, uncharged. */
  killAll(): void {
    const now = Date.now();
    for (const w of new Set([...this.inflight.values()].map((e) => e.worker))) this.pool.kill(w);
    for (const entry of this.inflight.values()) this.push(entry, { kind: 'interrupted' }, now);
    this.schedule();
  }

  get running(): number {
    return this.inflight.size;
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
        await this.exchange();
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
    const known = new Set([...this.inflight.values(), ...this.queue].map((e) => e.task.id));
    const released = await releaseLostClaims(this.store, this.batch.id, this.owner, known);
    this.outage.recovered();
    if (released) this.observer.note(`${released} task(s) claimed as the store went down were given back unstarted`);
  }

  /** Runs a commit of `batch` (taken off the queue); on failure puts it back, in order, to be committed later. */
  private async committing<T>(batch: Queued[], commit: () => Promise<T>): Promise<T> {
    try {
      return await commit();
    } catch (err) {
      this.queue = batch.concat(this.queue);
      throw err;
    }
  }

  /** Commits what finished and claims for the idle workers, in one transaction. */
  private async exchange(): Promise<void> {
    // A failure may end its task and trip --max-failures, which must stop the claim: commit
    // failures on their own first. (Successes, the common case, share the claim's transaction.)
    if (this.queue.some((q) => q.settlement.outcome !== 'SUCCESS')) await this.flush();
    const free = this.stopping ? [] : this.pool.freeSlots();
    if (this.queue.length === 0 && free.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    const now = Date.now();
    const request = {
      batchId: this.batch.id,
      owner: this.owner,
      host: HOST,
      now,
      leaseMs: this.options.leaseMs,
      slots: free.map((w) => ({ workerId: w.id, pid: w.pid })),
      // The version whose handler the pool loaded: under a newer one the store claims nothing.
      jobVersion: this.batch.jobVersion,
    };
    const { applied, claimed } = await this.committing(batch, () => this.store.settleAndClaim(batch.map((q) => q.settlement), request));
    const perWorker = new Map<PoolWorker, ClaimedTask[]>();
    claimed.forEach((task, i) => {
      const tasks = perWorker.get(free[i]!);
      if (tasks) tasks.push(task);
      else perWorker.set(free[i]!, [task]);
    });
    for (const [worker, tasks] of perWorker) this.dispatch(worker, tasks, now);
    await this.report(batch, new Set(applied));
    if (free.length > 0 && claimed.length < free.length) await this.sleepUntilDue(now);
  }

  /** Commits what finished (no claim): used when the run is ending. */
  private async flush(): Promise<void> {
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    await this.report(batch, new Set(await this.committing(batch, () => this.store.settle(batch.map((q) => q.settlement)))));
  }

  private async report(batch: Queued[], applied: Set<number>): Promise<void> {
    if (batch.length === 0) return;
    // Whether a failure ended its task is the store's call: the budget may have changed since the claim.
    // (An interrupted attempt of a task `cancel` stopped ends it CANCELLED.)
    const failedIds = batch.filter((q) => q.settlement.outcome !== 'SUCCESS').map((q) => q.task.id);
    // Committed already: a store gone meanwhile only costs the exact status (guessed below).
    const status = await this.store.statuses(failedIds).catch((err: unknown) => {
      if (isUnavailable(err)) return new Map<number, TaskStatus>();
      throw err;
    });
    for (const q of batch) {
      if (!applied.has(q.settlement.token)) {
        this.observer.note(`attempt ${q.task.attempt} of ${q.task.key} was fenced off (its lease was taken over); its result was discarded`);
        continue;
      }
      let now = status.get(q.task.id) ?? (q.settlement.outcome === 'SUCCESS' ? 'SUCCESS' : q.terminal ? 'FAILED' : 'PENDING');
      if (now === 'RUNNING') now = 'PENDING'; // already claimed again, by another coordinator: it was a retry
      if (now === 'FAILED') this.countFailure();
      this.observer.attemptEnded(q.task, q.settlement, now);
    }
  }

  private countFailure(): void {
    this.failures++;
    const { maxFailures } = this.options;
    if (maxFailures !== null && this.failures >= maxFailures) this.stop({ kind: 'max-failures' });
  }

  private dispatch(worker: PoolWorker, claimed: ClaimedTask[], now: number): void {
    const msgs: TaskMessage[] = [];
    for (const task of claimed) {
      const out = this.options.outputs.of(task);
      if (out && 'error' in out) {
        // A value no output path may hold (a `..` from a stage result): nothing runs, and no retry would help.
        const ending: Ending = { kind: 'reported', msg: { ...NOT_RUN, token: task.token, error: { name: 'PermanentError', message: out.error, retryable: false } }, timedOut: false };
        this.queue.push({ task, ...settle(task, ending, this.options.rules(task.stage), now, now) });
        continue;
      }
      if (out && this.options.outputs.upToDate(task, out.paths)) {
        this.queue.push({ task, settlement: this.options.outputs.upToDateSettlement(task, out.paths, now), terminal: true });
        continue;
      }
      this.inflight.set(task.token, { task, worker, head: false, startedAt: now, waited: false, timedOut: false, output: out?.paths ?? null, interrupted: false, timers: [] });
      msgs.push({
        token: task.token,
        key: task.key,
        batch: this.batch.name,
        stage: task.stage,
        seq: task.seq,
        attempt: task.attempt,
        payload: task.payload,
        inputs: task.inputs,
        logFile: attemptLogFile(this.logFolder, task.token),
        output: out?.paths ?? null,
      });
    }
    // Settled here without running (up to date): committed by the next tick, which claims again.
    if (msgs.length < claimed.length) this.schedule();
    if (msgs.length === 0) return;
    this.pool.dispatch(worker, msgs);
    this.startHead(worker, false);
  }

  /**
   * The worker's first queued attempt is running now, if it is a module attempt. An exec
   * attempt has begun only when its worker says its command started (`started`): its
   * timeout never counts from before that.
   */
  private startHead(worker: PoolWorker, waited: boolean): void {
    const token = worker.queue[0];
    const entry = token === undefined ? undefined : this.inflight.get(token);
    if (entry && !this.pool.reportsStarts(entry.task.stage)) this.begin(entry, waited);
  }

  /** An exec attempt's command started, maybe while the one ahead of it is still being reported. */
  private started(token: number): void {
    this.begin(this.inflight.get(token), true);
  }

  /** The attempt runs from now: its clock (and timeout) starts. */
  private begin(entry: Inflight | undefined, waited: boolean): void {
    if (!entry || entry.head) return;
    entry.head = true;
    entry.waited = waited;
    entry.startedAt = Date.now();
    const { timeoutMs, heartbeatTimeoutMs } = this.options.rules(entry.task.stage);
    if (timeoutMs !== null) entry.timers.push(longTimeout(() => this.timeOut(entry, 'timeout'), timeoutMs));
    if (heartbeatTimeoutMs !== null) {
      const logFile = this.pool.reportsStarts(entry.task.stage) ? attemptLogFile(this.logFolder, entry.task.token) : null;
      entry.silence = new SilenceWatch(heartbeatTimeoutMs, logFile, () => this.timeOut(entry, 'heartbeat'), entry.startedAt);
      entry.timers.push(entry.silence);
    }
  }

  /** Asks the worker to stop the attempt (TERM); kills the worker if it has not reported in time. */
  private timeOut(entry: Inflight, why: 'timeout' | 'heartbeat'): void {
    if (entry.timedOut) return; // the other limit stopped it already
    entry.timedOut = why;
    this.pool.abort(entry.worker, entry.task.token);
    entry.timers.push(longTimeout(() => this.pool.kill(entry.worker), this.options.killGraceMs + 1000));
  }

  private async sleepUntilDue(now: number): Promise<void> {
    const due = await this.store.nextDueAt(this.batch.id);
    const delay = due === null ? this.options.pollMs : Math.min(Math.max(due - now, 0), this.options.pollMs);
    clearTimeout(this.wake);
    // A tick still running when the run ended must not leave a timer holding the process.
    if (!this.finished) this.wake = setTimeout(() => this.schedule(), Math.max(delay, 5));
  }

  private async checkEnd(): Promise<void> {
    if (this.inflight.size > 0 || this.queue.length > 0) return;
    if (this.stopping) return this.finish(this.stopping);
    const c = await this.store.counts(this.batch.id);
    if (c.pending + c.retrying + c.running === 0) return this.finish({ kind: 'done' });
    if (this.pool.size === 0) throw new Error('every worker died and none could be restarted; see the errors above');
    if (this.options.noWait && this.pool.hasIdleWorker()) {
      // Nothing claimable may only mean claims stopped for a newer definition (before a poll saw it).
      return this.finish(await this.upkeep.definitionChanged() ? { kind: 'definition-changed' } : { kind: 'no-wait' });
    }
  }

  private ended(token: number, ending: Ending): void {
    const entry = this.inflight.get(token);
    if (!entry) return; // already settled (killed at shutdown)
    // A stopped attempt is INTERRUPTED (uncharged), unless it managed to succeed anyway.
    if (entry.interrupted && !(ending.kind === 'reported' && ending.msg.ok)) ending = { kind: 'interrupted' };
    else if (ending.kind !== 'interrupted') ending.timedOut = entry.timedOut; // each ending is a fresh object
    this.push(entry, ending, Date.now());
    // A success can wait for a few more to share its commit; anything else may stop the run
    // (--max-failures) or retry, and is committed at once.
    this.schedule(ending.kind === 'reported' && ending.msg.ok);
  }

  private push(entry: Inflight, ending: Ending, now: number): void {
    entry.timers.forEach((t) => t.cancel());
    this.inflight.delete(entry.task.token);
    const { settlement, terminal } = settle(entry.task, ending, this.options.rules(entry.task.stage), now, entry.startedAt, entry.waited);
    if (entry.output) {
      // The worker committed or removed it; a worker that died (or was killed) could not.
      if (ending.kind !== 'reported') discardOutput(entry.output);
      else if (settlement.outcome === 'SUCCESS') settlement.result = resultWithOut(settlement.result, entry.output.path);
    }
    this.queue.push({ task: entry.task, settlement, terminal });
  }
}

/** The fields of an attempt that never ran. */
const NOT_RUN: Omit<DoneMessage, 'token' | 'error'> = {
  ok: false,
  result: null,
  exitCode: null,
  signal: null,
  outputTail: null,
  logPath: null,
  durationMs: 0,
  startedAt: 0,
};
