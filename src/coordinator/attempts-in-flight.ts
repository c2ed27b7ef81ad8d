/** The attempts claimed and handed to workers, until each ends: their start, their clocks and their settlement. */
import { unlink } from 'node:fs/promises';
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
import { formGroups, halves } from './groups.js';
import { itemMessage, printId, runMessage, type Inflight, type Run } from './attempt-run.js';
import { OomKills } from './oom-kills.js';
import { decideSettlement, isBusy, killedOutright, upToDateSettlement, type Ending, type RetryRules } from './settlement.js';
import { SilenceWatch } from './silence-watch.js';

export interface AttemptSettings {
  batchName: string;
  /** This store's folder for this batch's logs. */
  logFolder: string;
  /** `--print`: where a run's copies of its stdout and stderr go, by its print id, or null. */
  printPrefix: ((id: string) => string) | null;
  /** The retry rules of a stage ('' for a batch without stages). */
  rules: (stage: string) => RetryRules;
  killGraceMs: number;
  outputs: DeclaredOutputs;
  /** Whether the run is stopping: a group that fails then is given back, not split. */
  stopping: () => boolean;
}

/** Claimed tasks made ready for their worker. */
export interface Prepared {
  /** Tasks settled without running (up to date, or an output no path may hold): for the next commit. */
  settled: Queued[];
  /** Tasks to hand to the worker, in claim order, and the messages of their runs. */
  started: ClaimedTask[];
  messages: TaskMessage[];
}

/** What an ended run leaves: settlements to commit, and a failed group's halves to hand to its worker. */
export interface RunEnded {
  settled: Queued[];
  again: { worker: PoolWorker; messages: TaskMessage[] } | null;
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
  /** Runs by the token the pool knows them by (their first item's). */
  private readonly runs = new Map<number, Run>();
  /** Tasks whose group's worker died under them, by id: at most how many items their next group holds. */
  private readonly bounds = new Map<number, number>();
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
    for (const r of this.runs.values()) if (r.started) n += r.members.length;
    return n;
  }

  /** Takes the tasks claimed for a worker's places in flight, as runs (groups), or settles those that must not run; nothing is sent yet (`send`). */
  prepare(worker: PoolWorker, places: ClaimedTask[][], now: number, queued: ReadonlySet<number>): Prepared {
    const out: Prepared = { settled: [], started: [], messages: [] };
    for (const claimed of places) {
      const runnable: { task: ClaimedTask; output: OutputPaths | null }[] = [];
      for (const task of claimed) {
        const ready = this.ready(task, now);
        if ('settled' in ready) out.settled.push(ready.settled);
        else runnable.push({ task, output: ready.output });
      }
      const outputs = new Map(runnable.map((r) => [r.task.token, r.output]));
      // A declared output is one item's ({out}, task.out): its task runs alone, also under a `batch` export.
      const limitOf = (task: ClaimedTask) => (outputs.get(task.token) ? 1 : Math.min(this.pool.groups.maxItems(task.stage), this.bounds.get(task.id) ?? Infinity));
      for (const group of formGroups(runnable.map((r) => r.task), limitOf)) {
        const members = group.map((task): Inflight => ({ task, worker, run: null!, claimedQueued: queued.has(task.token), output: outputs.get(task.token) ?? null }));
        // A group's logs are numbered from 1 (`<head>-1.log`), so every item's attempt shows it ran in one.
        const part = members.length > 1 ? 1 : 0;
        out.messages.push(this.newRun(worker, members, now, part, { parts: part }));
        out.started.push(...group);
      }
    }
    return out;
  }

  /** Hands prepared runs to their worker; returns the starts of those claimed as queued that run now. */
  send(worker: PoolWorker, messages: TaskMessage[]): AttemptStart[] {
    if (messages.length === 0) return [];
    this.pool.dispatch(worker, messages);
    return this.startHead(worker, false);
  }

  /**
   * The worker's first queued run is running now, if it is a module attempt. An exec
   * attempt has begun only when its worker says its command started (`started`): its
   * timeout never counts from before that.
   */
  startHead(worker: PoolWorker, waited: boolean): AttemptStart[] {
    const token = worker.queue[0];
    const run = token === undefined ? undefined : this.runs.get(token);
    return run && !this.pool.reportsStarts(run.members[0]!.task.stage) ? this.begin(run, waited) : [];
  }

  /** An exec run's command started, maybe while the one ahead of it is still being reported. */
  started(token: number): AttemptStart[] {
    return this.begin(this.runs.get(token), true);
  }

  /** A sign of life from the attempt (ctx.heartbeat()), for its silence watch. */
  heartbeat(token: number): void {
    this.runs.get(token)?.silence?.sign();
  }

  /**
   * The attempt's command ended well and its declared output is being synced: --timeout and
   * --heartbeat-timeout cover the command, so its clocks stop here (a slow disk's sync of a
   * 0.1 s command's output was recorded TIMEOUT). One that timed out already stays so.
   */
  ran(token: number): void {
    const run = this.runs.get(token);
    if (!run || run.timedOut) return;
    run.timers.forEach((t) => t.cancel());
    run.timers = [];
  }

  /** Marks every attempt INTERRUPTED however it ends, and asks its worker to stop it. */
  interruptAll(): void {
    const workers = new Set<PoolWorker>();
    for (const run of this.runs.values()) {
      run.interrupted = true;
      workers.add(run.worker);
    }
    for (const w of workers) this.pool.interrupt(w); // also drops its queued attempts
  }

  /** Kills every worker running an attempt; returns each attempt settled as INTERRUPTED. */
  killAll(): Queued[] {
    const now = Date.now();
    const runs = [...this.runs.values()];
    for (const w of new Set(runs.map((r) => r.worker))) this.pool.kill(w);
    return runs.flatMap((run) => this.settleRun(run, { kind: 'interrupted' }, now));
  }

  /**
   * The run the pool knows by `token` ended: each item's settlement, for the next commit (none:
   * settled already, killed at shutdown). A group that failed as a whole is split instead: its
   * halves go back to its worker (`again`), until the items that fail on their own are found.
   */
  ended(token: number, ending: Ending): RunEnded {
    const run = this.runs.get(token);
    if (!run) return { settled: [], again: null };
    // A stopped attempt is INTERRUPTED (uncharged), unless it managed to succeed anyway.
    if (run.interrupted && !(ending.kind === 'reported' && ending.msg.ok)) ending = { kind: 'interrupted' };
    else if (ending.kind === 'reported' || ending.kind === 'died') {
      ending.timedOut = run.timedOut; // each ending is a fresh object
      // A clock of ours killed it, or something did: the OOM killer, if its count rose.
      ending.outOfMemory = !run.timedOut && killedOutright(ending) && this.oomKills.claim();
    }
    const now = Date.now();
    const n = run.members.length;
    // `-N`: {1}…{N} name the group's items by place, so a group is one unit: never split.
    if (n > 1 && !this.pool.groups.splits(run.members[0]!.task.stage)) return { settled: this.settleRun(run, ending, now), again: null };
    if (n > 1 && ending.kind === 'died') {
      // Its worker is gone, maybe because of one item: none is charged, and each next runs in a group half as big.
      for (const m of run.members) this.bounds.set(m.task.id, Math.ceil(n / 2));
      return { settled: this.settleRun(run, { kind: 'interrupted', why: `its group of ${n} items lost its worker (${ending.why}); run again in smaller groups` }, now), again: null };
    }
    // A group that answered busy as a whole is not split: every item of it waits, uncharged.
    if (n > 1 && ending.kind === 'reported' && !ending.msg.ok && !isBusy(ending.msg, this.settings.rules(run.members[0]!.task.stage))) {
      if (this.settings.stopping()) return { settled: this.settleRun(run, { kind: 'interrupted', why: `its group of ${n} items failed as the run stopped` }, now), again: null };
      return { settled: [], again: { worker: run.worker, messages: this.split(run, now) } };
    }
    return { settled: this.settleRun(run, ending, now), again: null };
  }

  /** Whether a claimed task runs: its declared output's paths, or its settlement when it must not (up to date, or no path may hold it). */
  private ready(task: ClaimedTask, now: number): { output: OutputPaths | null } | { settled: Queued } {
    const { outputs, rules } = this.settings;
    const output = outputs.of(task);
    if (output && 'error' in output) {
      // A value no output path may hold (a `..` from a stage result): nothing runs, and no retry would help.
      const ending: Ending = { kind: 'not-run', error: { name: 'PermanentError', message: output.error, retryable: false } };
      return { settled: { task, ...decideSettlement(task, ending, rules(task.stage), now, now) } };
    }
    if (output && outputs.upToDate(task, output.paths)) return { settled: { task, settlement: upToDateSettlement(task, output.paths.path, now), terminal: true } };
    return { output: output?.paths ?? null };
  }

  /** Registers a run of `members` on `worker` and returns its message. */
  private newRun(worker: PoolWorker, members: Inflight[], now: number, part: number, family: Run['family']): TaskMessage {
    const head = members[0]!;
    const run: Run = { head: head.task.token, members, worker, part, family, started: false, startedAt: now, waited: false, timedOut: false, interrupted: false, timers: [] };
    for (const m of members) {
      m.run = run;
      this.entries.set(m.task.token, m);
    }
    this.runs.set(run.head, run);
    return runMessage(run, this.settings);
  }

  /** A failed group's halves, as new runs of the same attempts on the same worker; its own copies for --print go. */
  private split(run: Run, now: number): TaskMessage[] {
    this.forget(run);
    this.discardCopies(run);
    // Its log is no attempt's: each item's own end is logged by the command that decides it.
    void unlink(attemptLogFile(this.settings.logFolder, run.head, run.part)).catch(() => undefined);
    return halves(run.members).map((members) => {
      for (const m of members) m.claimedQueued = false; // the store was told they started
      // A half of one task is that task's alone: its own log and copies, as if never grouped.
      return this.newRun(run.worker, members, now, members.length > 1 ? ++run.family.parts : 0, run.family);
    });
  }

  /** The run runs from now: its clock (and timeout, its items' together) starts. Returns the starts of its items the store has as queued. */
  private begin(run: Run | undefined, waited: boolean): AttemptStart[] {
    if (!run || run.started) return [];
    run.started = true;
    run.waited = waited;
    run.startedAt = Date.now();
    const stage = run.members[0]!.task.stage;
    const { timeoutMs, heartbeatTimeoutMs } = this.settings.rules(stage);
    if (timeoutMs !== null) run.timers.push(longTimeout(() => this.timeOut(run, 'timeout'), timeoutMs * run.members.length));
    if (heartbeatTimeoutMs !== null) {
      const logFile = this.pool.reportsStarts(stage) ? attemptLogFile(this.settings.logFolder, run.head, run.part) : null;
      run.silence = new SilenceWatch(heartbeatTimeoutMs, logFile, () => this.timeOut(run, 'heartbeat'));
      run.timers.push(run.silence);
    }
    const starts: AttemptStart[] = [];
    for (const m of run.members) if (m.claimedQueued) starts.push({ taskId: m.task.id, token: m.task.token, at: run.startedAt });
    return starts;
  }

  /** Asks the worker to stop the run (TERM); kills the worker if it has not reported in time. */
  private timeOut(run: Run, why: 'timeout' | 'heartbeat'): void {
    if (run.timedOut) return; // the other limit stopped it already
    run.timedOut = why;
    this.pool.abort(run.worker, run.head);
    run.timers.push(longTimeout(() => this.pool.kill(run.worker), this.settings.killGraceMs + 1000));
  }

  private forget(run: Run): void {
    run.timers.forEach((t) => t.cancel());
    run.timers = [];
    if (this.runs.get(run.head) === run) this.runs.delete(run.head);
  }

  /** A split group's --print copies: never printed (each item's output is the command that decides it). */
  private discardCopies(run: Run): void {
    const prefix = this.settings.printPrefix?.(printId(run));
    if (prefix) for (const s of ['out', 'err']) void unlink(`${prefix}.${s}`).catch(() => undefined);
  }

  /**
   * Each item of the run settled by its ending (a `batch` call's item by its own outcome; one
   * that failed in a stopped run is INTERRUPTED, as a lone attempt would be). The command's
   * output is printed by one item: the first whose settlement ends its task, if any does.
   */
  private settleRun(run: Run, ending: Ending, now: number): Queued[] {
    this.forget(run);
    const items = ending.kind === 'reported' ? ending.msg.items : undefined;
    const settled = run.members.map((m, i) => {
      let own: Ending = items && ending.kind === 'reported' ? { ...ending, msg: itemMessage(ending.msg, m.task.token, items[i]) } : ending;
      if (run.interrupted && own.kind === 'reported' && !own.msg.ok) own = { kind: 'interrupted' };
      return this.settle(m, own, now);
    });
    // A group that answered busy as a whole comes back as one: its items wait the same time (one
    // jitter, not one each), so they are claimed, and grouped, together again.
    const busy = settled.filter((q) => q.settlement.outcome === 'BUSY');
    if (!items && busy.length > 1) for (const q of busy) [q.settlement.retryAt, q.settlement.error] = [busy[0]!.settlement.retryAt, busy[0]!.settlement.error];
    if (run.members.length > 1 || run.part > 0) {
      const lead = Math.max(0, settled.findIndex((q) => q.terminal));
      const keys = run.members.map((x) => x.task.key);
      settled.forEach((q, i) => (q.printed = { id: printId(run), lead: i === lead, keys: i === lead ? keys : [] }));
    }
    return settled;
  }

  private settle(entry: Inflight, ending: Ending, now: number): Queued {
    this.entries.delete(entry.task.token);
    const { run } = entry;
    const { settlement, terminal } = decideSettlement(entry.task, ending, this.settings.rules(entry.task.stage), now, run.startedAt, run.waited, entry.output);
    // A worker removes what a failure left; one that died (or was killed) could not, and a
    // report settled as anything but a success leaves its file too. A success's file waits at
    // its temporary path, recorded with the commit, renamed once it won.
    const kept = settlement.outputTemp !== undefined ? entry.output : null;
    if (entry.output && !kept) discardOutput(entry.output);
    return { task: entry.task, settlement, terminal, output: kept };
  }
}
