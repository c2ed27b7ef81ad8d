import { longTimeout } from '../long-timer.js';
import { attemptLogFile } from '../store/log-layout.js';
import type { AttemptStart, ClaimedTask } from '../store/task-store.js';
import { discardOutput } from '../output/commit-output.js';
import type { OutputPaths } from '../output/output-path.js';
import type { TaskMessage } from '../worker/protocol.js';
import { notRunOutcome } from '../worker/run-exec.js';
import type { Queued } from './commit-queue.js';
import { resultWithOut, type DeclaredOutputs } from './declared-outputs.js';
import type { PoolWorker, WorkerPool } from '../pool/pool.js';
import { settle, type Ending, type RetryRules, type TimedOut } from './settlement.js';
import { SilenceWatch } from './silence-watch.js';

export interface Inflight {
  task: ClaimedTask;
  worker: PoolWorker;
  /** Whether it has started (the others wait in its worker's queue, or its launcher's). */
  head: boolean;
  /** When it started running; until then, when it was claimed. */
  startedAt: number;
  /** It waited queued behind another attempt on its worker before it started. */
  waited: boolean;
  /** Claimed as queued: the store shows its task queued until told it started. */
  claimedQueued: boolean;
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

export interface AttemptsHost {
  pool: WorkerPool;
  batchName: string;
  /** This store's folder for this batch's logs. */
  logFolder: string;
  /** `--print`: where an attempt's copies of its stdout and stderr go, or null. */
  printPrefix: ((token: number) => string) | null;
  /** An attempt is handed to its worker (claim order). */
  started(task: ClaimedTask): void;
  /** The retry rules of a stage ('' for a batch without stages). */
  rules: (stage: string) => RetryRules;
  killGraceMs: number;
  outputs: DeclaredOutputs;
  /** An attempt settled (it ended, or was settled without running): it waits for the next commit. */
  settled(q: Queued): void;
  /** An attempt claimed as queued started: the store is told with the next commit (within START_MARK_MS). */
  startedQueued(s: AttemptStart): void;
  /** Asks the loop for a tick; `soon`: it may wait briefly for others to share its commit. */
  schedule(soon?: boolean): void;
}

/**
 * The attempts claimed and handed to workers, by token, until each ends and is settled:
 * their start, their clocks (--timeout, --heartbeat-timeout) and their declared outputs.
 */
export class AttemptsInFlight {
  private readonly entries = new Map<number, Inflight>();
  /** By token, read-only outside: upkeep renews their leases and kills those taken over. */
  readonly inflight: ReadonlyMap<number, Inflight> = this.entries;

  constructor(private readonly host: AttemptsHost) {}

  get size(): number {
    return this.entries.size;
  }

  dispatch(worker: PoolWorker, claimed: ClaimedTask[], now: number, queued: ReadonlySet<number> = new Set()): void {
    const { outputs, rules } = this.host;
    const msgs: TaskMessage[] = [];
    for (const task of claimed) {
      const out = outputs.of(task);
      if (out && 'error' in out) {
        // A value no output path may hold (a `..` from a stage result): nothing runs, and no retry would help.
        const msg = { ...notRunOutcome({ name: 'PermanentError', message: out.error, retryable: false }), token: task.token };
        const ending: Ending = { kind: 'reported', msg, timedOut: false };
        this.host.settled({ task, ...settle(task, ending, rules(task.stage), now, now) });
        continue;
      }
      if (out && outputs.upToDate(task, out.paths)) {
        this.host.settled({ task, settlement: outputs.upToDateSettlement(task, out.paths, now), terminal: true });
        continue;
      }
      const claimedQueued = queued.has(task.token);
      this.entries.set(task.token, { task, worker, head: false, startedAt: now, waited: false, claimedQueued, timedOut: false, output: out?.paths ?? null, interrupted: false, timers: [] });
      msgs.push({
        token: task.token,
        key: task.key,
        batch: this.host.batchName,
        stage: task.stage,
        seq: task.seq,
        attempt: task.attempt,
        payload: task.payload,
        inputs: task.inputs,
        logFile: attemptLogFile(this.host.logFolder, task.token),
        output: out?.paths ?? null,
        print: this.host.printPrefix?.(task.token) ?? null,
      });
      this.host.started(task);
    }
    // Settled here without running (up to date): committed by the next tick, which claims again.
    if (msgs.length < claimed.length) this.host.schedule();
    if (msgs.length === 0) return;
    this.host.pool.dispatch(worker, msgs);
    this.startHead(worker, false);
  }

  /**
   * The worker's first queued attempt is running now, if it is a module attempt. An exec
   * attempt has begun only when its worker says its command started (`started`): its
   * timeout never counts from before that.
   */
  startHead(worker: PoolWorker, waited: boolean): void {
    const token = worker.queue[0];
    const entry = token === undefined ? undefined : this.entries.get(token);
    if (entry && !this.host.pool.reportsStarts(entry.task.stage)) this.begin(entry, waited);
  }

  /** An exec attempt's command started, maybe while the one ahead of it is still being reported. */
  started(token: number): void {
    this.begin(this.entries.get(token), true);
  }

  /** A sign of life from the attempt (ctx.heartbeat()), for its silence watch. */
  heartbeat(token: number): void {
    this.entries.get(token)?.silence?.sign();
  }

  /** Marks every attempt INTERRUPTED however it ends, and asks its worker to stop it. */
  interruptAll(): void {
    const workers = new Set<PoolWorker>();
    for (const entry of this.entries.values()) {
      entry.interrupted = true;
      workers.add(entry.worker);
    }
    for (const w of workers) this.host.pool.interrupt(w); // also drops its queued attempts
  }

  /** Kills every worker running an attempt and settles each as INTERRUPTED. */
  killAll(): void {
    const now = Date.now();
    for (const w of new Set([...this.entries.values()].map((e) => e.worker))) this.host.pool.kill(w);
    for (const entry of this.entries.values()) this.push(entry, { kind: 'interrupted' }, now);
  }

  ended(token: number, ending: Ending): void {
    const entry = this.entries.get(token);
    if (!entry) return; // already settled (killed at shutdown)
    // A stopped attempt is INTERRUPTED (uncharged), unless it managed to succeed anyway.
    if (entry.interrupted && !(ending.kind === 'reported' && ending.msg.ok)) ending = { kind: 'interrupted' };
    else if (ending.kind !== 'interrupted') ending.timedOut = entry.timedOut; // each ending is a fresh object
    this.push(entry, ending, Date.now());
    // A success can wait for a few more to share its commit; anything else may stop the run
    // (--max-failures) or retry, and is committed at once.
    this.host.schedule(ending.kind === 'reported' && ending.msg.ok);
  }

  /** The attempt runs from now: its clock (and timeout) starts. */
  private begin(entry: Inflight | undefined, waited: boolean): void {
    if (!entry || entry.head) return;
    entry.head = true;
    entry.waited = waited;
    entry.startedAt = Date.now();
    if (entry.claimedQueued) this.host.startedQueued({ taskId: entry.task.id, token: entry.task.token, at: entry.startedAt });
    const { timeoutMs, heartbeatTimeoutMs } = this.host.rules(entry.task.stage);
    if (timeoutMs !== null) entry.timers.push(longTimeout(() => this.timeOut(entry, 'timeout'), timeoutMs));
    if (heartbeatTimeoutMs !== null) {
      const logFile = this.host.pool.reportsStarts(entry.task.stage) ? attemptLogFile(this.host.logFolder, entry.task.token) : null;
      entry.silence = new SilenceWatch(heartbeatTimeoutMs, logFile, () => this.timeOut(entry, 'heartbeat'));
      entry.timers.push(entry.silence);
    }
  }

  /** Asks the worker to stop the attempt (TERM); kills the worker if it has not reported in time. */
  private timeOut(entry: Inflight, why: 'timeout' | 'heartbeat'): void {
    if (entry.timedOut) return; // the other limit stopped it already
    entry.timedOut = why;
    this.host.pool.abort(entry.worker, entry.task.token);
    entry.timers.push(longTimeout(() => this.host.pool.kill(entry.worker), this.host.killGraceMs + 1000));
  }

  private push(entry: Inflight, ending: Ending, now: number): void {
    entry.timers.forEach((t) => t.cancel());
    this.entries.delete(entry.task.token);
    const { settlement, terminal } = settle(entry.task, ending, this.host.rules(entry.task.stage), now, entry.startedAt, entry.waited);
    let output: OutputPaths | null = null;
    if (entry.output) {
      // A worker removes what a failure left; one that died (or was killed) could not, and a
      // report settled as anything but a success leaves its file too. A success's file waits at
      // its temporary path, recorded with the commit, renamed once it won.
      if (ending.kind !== 'reported' || settlement.outcome !== 'SUCCESS') discardOutput(entry.output);
      else {
        settlement.result = resultWithOut(settlement.result, entry.output.path);
        settlement.outputTemp = entry.output.temp;
        output = entry.output;
      }
    }
    this.host.settled({ task: entry.task, settlement, terminal, output });
  }
}
