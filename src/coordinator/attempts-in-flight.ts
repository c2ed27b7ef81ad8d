/** The attempts claimed and handed to workers, until each ends: their start, their clocks and their settlement. */
import { longTimeout } from '../long-timer.js';
import { attemptLogFile } from '../store/log-layout.js';
import type { AttemptStart, ClaimedTask } from '../store/task-store.js';
import { discardOutput } from '../output/commit-output.js';
import type { OutputPaths } from '../output/output-path.js';
import type { TaskMessage } from '../worker/protocol.js';
import type { Queued } from './commit-queue.js';
import type { DeclaredOutputs } from './declared-outputs.js';
import type { PoolWorker } from '../pool/pool.js';
import type { AttemptPool } from './run-types.js';
import { OomKills } from './oom-kills.js';
import { decideSettlement, killedOutright, upToDateSettlement, type Ending, type RetryRules, type TimedOut } from './settlement.js';
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

export interface AttemptSettings {
  batchName: string;
  /** This store's folder for this batch's logs. */
  logFolder: string;
  /** `--print`: where an attempt's copies of its stdout and stderr go, or null. */
  printPrefix: ((token: number) => string) | null;
  /** The retry rules of a stage ('' for a batch without stages). */
  rules: (stage: string) => RetryRules;
  killGraceMs: number;
  outputs: DeclaredOutputs;
}

/** Claimed tasks made ready for their worker. */
export interface Prepared {
  /** Tasks settled without running (up to date, or an output no path may hold): for the next commit. */
  settled: Queued[];
  /** Tasks to hand to the worker, in claim order, and their messages. */
  started: ClaimedTask[];
  messages: TaskMessage[];
}

/**
 * The attempts claimed and handed to workers, by token, until each ends and is settled:
 * their start, their clocks (--timeout, --heartbeat-timeout) and their declared outputs.
 * Its methods return what the coordinator is to commit; only the pool is acted on here
 * (stopping an attempt whose clock ran out).
 */
export class AttemptsInFlight {
  private readonly entries = new Map<number, Inflight>();
  /** By token, read-only outside: upkeep renews their leases and kills those taken over. */
  readonly inflight: ReadonlyMap<number, Inflight> = this.entries;
  /** The kernel's count of OOM kills, read when a SIGKILL ends something of this run. */
  readonly oomKills = new OomKills();

  constructor(
    private readonly pool: AttemptPool,
    private readonly settings: AttemptSettings,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** The attempts that have started (the rest wait queued on their slot). */
  get startedCount(): number {
    let n = 0;
    for (const e of this.entries.values()) if (e.head) n++;
    return n;
  }

  /** Takes claimed tasks in flight, or settles those that must not run; nothing is sent yet (`send`). */
  prepare(worker: PoolWorker, claimed: ClaimedTask[], now: number, queued: ReadonlySet<number>): Prepared {
    const { outputs, rules } = this.settings;
    const out: Prepared = { settled: [], started: [], messages: [] };
    for (const task of claimed) {
      const output = outputs.of(task);
      if (output && 'error' in output) {
        // A value no output path may hold (a `..` from a stage result): nothing runs, and no retry would help.
        const ending: Ending = { kind: 'not-run', error: { name: 'PermanentError', message: output.error, retryable: false } };
        out.settled.push({ task, ...decideSettlement(task, ending, rules(task.stage), now, now) });
        continue;
      }
      if (output && outputs.upToDate(task, output.paths)) {
        out.settled.push({ task, settlement: upToDateSettlement(task, output.paths.path, now), terminal: true });
        continue;
      }
      const claimedQueued = queued.has(task.token);
      this.entries.set(task.token, { task, worker, head: false, startedAt: now, waited: false, claimedQueued, timedOut: false, output: output?.paths ?? null, interrupted: false, timers: [] });
      out.messages.push({
        token: task.token,
        key: task.key,
        batch: this.settings.batchName,
        stage: task.stage,
        seq: task.seq,
        attempt: task.attempt,
        payload: task.payload,
        inputs: task.inputs,
        logFile: attemptLogFile(this.settings.logFolder, task.token),
        output: output?.paths ?? null,
        print: this.settings.printPrefix?.(task.token) ?? null,
      });
      out.started.push(task);
    }
    return out;
  }

  /** Hands prepared attempts to their worker; returns the start of one claimed as queued that runs now. */
  send(worker: PoolWorker, messages: TaskMessage[]): AttemptStart | null {
    if (messages.length === 0) return null;
    this.pool.dispatch(worker, messages);
    return this.startHead(worker, false);
  }

  /**
   * The worker's first queued attempt is running now, if it is a module attempt. An exec
   * attempt has begun only when its worker says its command started (`started`): its
   * timeout never counts from before that.
   */
  startHead(worker: PoolWorker, waited: boolean): AttemptStart | null {
    const token = worker.queue[0];
    const entry = token === undefined ? undefined : this.entries.get(token);
    return entry && !this.pool.reportsStarts(entry.task.stage) ? this.begin(entry, waited) : null;
  }

  /** An exec attempt's command started, maybe while the one ahead of it is still being reported. */
  started(token: number): AttemptStart | null {
    return this.begin(this.entries.get(token), true);
  }

  /** A sign of life from the attempt (ctx.heartbeat()), for its silence watch. */
  heartbeat(token: number): void {
    this.entries.get(token)?.silence?.sign();
  }

  /**
   * The attempt's command ended well and its declared output is being synced: --timeout and
   * --heartbeat-timeout cover the command, so its clocks stop here (a slow disk's sync of a
   * 0.1 s command's output was recorded TIMEOUT). One that timed out already stays so.
   */
  ran(token: number): void {
    const entry = this.entries.get(token);
    if (!entry || entry.timedOut) return;
    entry.timers.forEach((t) => t.cancel());
    entry.timers = [];
  }

  /** Marks every attempt INTERRUPTED however it ends, and asks its worker to stop it. */
  interruptAll(): void {
    const workers = new Set<PoolWorker>();
    for (const entry of this.entries.values()) {
      entry.interrupted = true;
      workers.add(entry.worker);
    }
    for (const w of workers) this.pool.interrupt(w); // also drops its queued attempts
  }

  /** Kills every worker running an attempt; returns each attempt settled as INTERRUPTED. */
  killAll(): Queued[] {
    const now = Date.now();
    for (const w of new Set([...this.entries.values()].map((e) => e.worker))) this.pool.kill(w);
    return [...this.entries.values()].map((entry) => this.settle(entry, { kind: 'interrupted' }, now));
  }

  /** The attempt ended: its settlement, for the next commit (null: settled already, killed at shutdown). */
  ended(token: number, ending: Ending): Queued | null {
    const entry = this.entries.get(token);
    if (!entry) return null;
    // A stopped attempt is INTERRUPTED (uncharged), unless it managed to succeed anyway.
    if (entry.interrupted && !(ending.kind === 'reported' && ending.msg.ok)) ending = { kind: 'interrupted' };
    else if (ending.kind === 'reported' || ending.kind === 'died') {
      ending.timedOut = entry.timedOut; // each ending is a fresh object
      // A clock of ours killed it, or something did: the OOM killer, if its count rose.
      ending.outOfMemory = !entry.timedOut && killedOutright(ending) && this.oomKills.claim();
    }
    return this.settle(entry, ending, Date.now());
  }

  /** The attempt runs from now: its clock (and timeout) starts. Returns its start when the store has it as queued. */
  private begin(entry: Inflight | undefined, waited: boolean): AttemptStart | null {
    if (!entry || entry.head) return null;
    entry.head = true;
    entry.waited = waited;
    entry.startedAt = Date.now();
    const { timeoutMs, heartbeatTimeoutMs } = this.settings.rules(entry.task.stage);
    if (timeoutMs !== null) entry.timers.push(longTimeout(() => this.timeOut(entry, 'timeout'), timeoutMs));
    if (heartbeatTimeoutMs !== null) {
      const logFile = this.pool.reportsStarts(entry.task.stage) ? attemptLogFile(this.settings.logFolder, entry.task.token) : null;
      entry.silence = new SilenceWatch(heartbeatTimeoutMs, logFile, () => this.timeOut(entry, 'heartbeat'));
      entry.timers.push(entry.silence);
    }
    return entry.claimedQueued ? { taskId: entry.task.id, token: entry.task.token, at: entry.startedAt } : null;
  }

  /** Asks the worker to stop the attempt (TERM); kills the worker if it has not reported in time. */
  private timeOut(entry: Inflight, why: 'timeout' | 'heartbeat'): void {
    if (entry.timedOut) return; // the other limit stopped it already
    entry.timedOut = why;
    this.pool.abort(entry.worker, entry.task.token);
    entry.timers.push(longTimeout(() => this.pool.kill(entry.worker), this.settings.killGraceMs + 1000));
  }

  private settle(entry: Inflight, ending: Ending, now: number): Queued {
    entry.timers.forEach((t) => t.cancel());
    this.entries.delete(entry.task.token);
    const { settlement, terminal } = decideSettlement(entry.task, ending, this.settings.rules(entry.task.stage), now, entry.startedAt, entry.waited, entry.output);
    // A worker removes what a failure left; one that died (or was killed) could not, and a
    // report settled as anything but a success leaves its file too. A success's file waits at
    // its temporary path, recorded with the commit, renamed once it won.
    const kept = settlement.outputTemp !== undefined ? entry.output : null;
    if (entry.output && !kept) discardOutput(entry.output);
    return { task: entry.task, settlement, terminal, output: kept };
  }
}
