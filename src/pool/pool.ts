import { fork } from 'node:child_process';
import type { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { UsageError, errorLine, type ResourceError } from '../errors.js';
import { formatMs } from '../job/units.js';
import { printable } from '../printable.js';
import { killGroup, processStopped } from '../worker/kill-group.js';
import type { DoneMessage, FromWorker, HandlerSpec, TaskMessage, ToWorker } from '../worker/protocol.js';
import { Spawner } from '../worker/spawner.js';
import { InProcessWorker } from './in-process-worker.js';
import { BOOT_MS, LIMIT_SAID, neverBooted, refused } from './start-failure.js';
import * as slots from './slots.js';
import { monotonicMs } from '../wall-steps.js';

const CHILD_MAIN = fileURLToPath(new URL('../worker/child-main.js', import.meta.url));
const STDERR_KEEP = 2048;
const MAX_LOAD_FAILURES = 5;
/**
 * Workers killed from outside (SIGKILL, SIGTERM, SIGINT, SIGHUP: a user, the OOM killer) before
 * their handler was ready say nothing about the handler: a pool whose workers are killed as they
 * start (a fault test kills one every ~100 ms while a load takes longer under load) keeps
 * replacing them. Still bounded, so a handler whose import always gets its worker OOM-killed
 * ends the run.
 */
const MAX_LOAD_KILLS = 25;
const OUTSIDE_KILLS = new Set(['SIGKILL', 'SIGTERM', 'SIGINT', 'SIGHUP']);

export interface PoolWorker {
  readonly id: string;
  readonly pid: number | null;
  /**
   * The attempts handed to this worker and not yet ended, in order: the first runs, the rest
   * wait (an exec attempt may start before the one ahead of it is reported: see `started`).
   */
  readonly queue: number[];
  tasksRun: number;
  ready: boolean;
  /** Set when the worker should exit once idle (recycling). */
  retiring: boolean;
}

export interface PoolEvents {
  done(worker: PoolWorker, msg: DoneMessage): void;
  /** Attempts queued on the worker were taken back, never started (`why`, unless a shutdown did it). */
  dropped(worker: PoolWorker, tokens: number[], why: string): void;
  /** The worker died (by `signal`, if one killed it): `running`, the attempts it had started; `queued`, those that never started. */
  exited(worker: PoolWorker, running: number[], why: string, queued: number[], signal: NodeJS.Signals | null): void;
  /** An attempt queued on the worker started (an exec attempt's command; a module attempt starts when the one before is done). */
  started(worker: PoolWorker, token: number): void;
  /** A worker became ready and idle. */
  idle(): void;
  heartbeat(token: number): void;
  /** A replacement worker could not be started (`why`): the pool runs on with one fewer. */
  shrunk(why: string): void;
}

export interface PoolOptions {
  size: number;
  /** The handler of every stage ('' for a batch without stages). */
  handlers: Record<string, HandlerSpec>;
  killGraceMs: number;
  maxTasksPerWorker: number | null;
  maxWorkerMemory: number | null;
  /** A worker whose handler module has not loaded after this long is killed: a usage error naming the module. */
  loadTimeoutMs: number;
  idPrefix: string;
}

/** A forked worker process, or an InProcessWorker that looks like one. */
interface WorkerProcess extends EventEmitter {
  readonly pid?: number | undefined;
  readonly connected: boolean;
  readonly exitCode: number | null;
  readonly signalCode: NodeJS.Signals | null;
  readonly stderr: Readable | null;
  send(msg: ToWorker): boolean;
  disconnect(): void;
}

/** A worker: its place in the schedule (slots.ts) and its process. */
interface Slot extends PoolWorker, slots.SlotState {
  queue: number[];
  proc: WorkerProcess;
  stderr: string;
  /** Its started exec attempts' process groups, by token, until each is done. */
  groups: Map<number, number>;
  /** Its process runs its own code (see `booted` in protocol.ts); an in-process worker always does. */
  booted: boolean;
}

/**
 * Owns the worker processes: fork, load the handler, replace the dead, recycle the
 * worn, shut down. Each worker leads its own process group (`detached`), so a terminal's
 * Ctrl-C reaches only the coordinator, which decides how the workers stop.
 */
export class WorkerPool {
  private readonly workers = new Set<Slot>();
  private next = 1;
  private closing = false;
  private running = false;
  private loadFailures = 0;
  private loadKills = 0;
  /** Why the last worker that could not be started at all (no process to be had) failed. */
  private startFailure: ResourceError | null = null;

  private events: PoolEvents = { done() {}, dropped() {}, exited() {}, started() {}, idle() {}, heartbeat() {}, shrunk() {} };

  private readonly execOnly: boolean;

  constructor(private readonly options: PoolOptions) {
    this.execOnly = Object.values(options.handlers).every((h) => h.kind === 'exec');
  }

  /** Routes worker events to the coordinator (the pool starts before the coordinator exists). */
  attach(events: PoolEvents): void {
    this.events = events;
  }

  /** No more replacements or recycling: used once the run is stopping. */
  quiesce(): void {
    this.closing = true;
  }

  /**
   * Forks `count` workers (default: the pool's size) and waits until each has loaded the
   * handler; a load failure is a UsageError. `run` starts one, to prove the handler loads
   * before anything is written, and grows the pool once it knows how much work there is.
   */
  async start(count = this.options.size): Promise<void> {
    const loads = Array.from({ length: Math.max(1, Math.min(count, this.options.size)) }, () => this.spawn());
    const results = await Promise.allSettled(loads);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      await this.shutdown();
      throw failed.reason;
    }
    this.running = true;
  }

  /**
   * Adds workers up to `target` (never above the pool's size): no more workers than there
   * are tasks to run (`-j 50` for one task starts one). A worker that fails to load now is
   * left out, like a failed replacement. Returns what to tell the user when the machine would
   * not give it the processes or descriptors for all of them: the run goes on with those it has.
   */
  async grow(target: number): Promise<string | null> {
    const wanted = Math.min(target, this.options.size);
    const missing = wanted - this.workers.size;
    if (missing <= 0) return null;
    const results = await Promise.allSettled(Array.from({ length: missing }, () => this.spawn()));
    const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected' && (r.reason as Error).name === 'ResourceError');
    if (!refused) return null;
    return `started ${this.workers.size} of ${wanted} workers and runs with those: ${(refused.reason as Error).message}`;
  }

  /** Why no worker could be started, when that is why the pool is empty. */
  get emptyBecause(): ResourceError | null {
    return this.workers.size === 0 ? this.startFailure : null;
  }

  /** One entry per attempt the pool can take now: a worker appears once per free place in its window. */
  freeSlots(): PoolWorker[] {
    return slots.freeSlots(this.workers, this.options.maxTasksPerWorker, monotonicMs());
  }

  /** Whether a stage's attempts say when they start (`spawned`): its exec commands do. */
  reportsStarts(stage: string): boolean {
    return this.options.handlers[stage]?.kind === 'exec';
  }

  /** Whether some worker holds no next attempt (a queue of at most the running one). */
  needsWork(): boolean {
    return slots.needsWork(this.workers);
  }

  /** Whether some worker has nothing to do. */
  hasIdleWorker(): boolean {
    return slots.hasIdleWorker(this.workers);
  }

  /** Workers holding queued attempts behind one that runs long while another is idle: the caller takes those back (`drop`). */
  stuck(ms: number): PoolWorker[] {
    return slots.stuck(this.workers, ms, monotonicMs());
  }

  /** Workers whose process (a forked worker, an `--exec` slot's helper) has been stopped (SIGSTOP) for `ms` or more while holding attempts: see slots.ts. Looked at once a poll. */
  stopped(ms: number, now = Date.now()): PoolWorker[] {
    return slots.stopped(this.workers, ms, now, processStopped);
  }

  /** Asks the worker to give back its queued attempts (reported through `dropped`). */
  drop(worker: PoolWorker): void {
    this.send(worker as Slot, { type: 'drop' });
  }

  /** Asks every worker holding queued attempts to give them back (the run is stopping). */
  dropQueued(): void {
    for (const w of this.workers) if (w.queue.length > 1) this.drop(w);
  }

  /** Queues attempts on the worker, in order, in one message. */
  dispatch(worker: PoolWorker, tasks: TaskMessage[]): void {
    slots.queueAttempts(worker as Slot, tasks.map((t) => t.token), monotonicMs());
    this.send(worker as Slot, { type: 'run', tasks });
  }

  /** Stops one running attempt of the worker (its timeout). */
  abort(worker: PoolWorker, token: number): void {
    this.send(worker as Slot, { type: 'abort', token, reason: 'timeout' });
  }

  /** A shutdown: stops every attempt the worker started and takes back its queued ones (see `dropped`). */
  interrupt(worker: PoolWorker): void {
    if (worker.queue.length) this.send(worker as Slot, { type: 'abort', token: null, reason: 'shutdown' });
  }

  /** SIGKILLs the worker's process group and its exec attempts' groups. */
  kill(worker: PoolWorker): void {
    for (const pgid of (worker as Slot).groups.values()) killGroup(pgid, 'SIGKILL');
    if (worker.pid) killGroup(worker.pid, 'SIGKILL');
  }

  /** Stops every worker: close their channels (they exit by themselves), then kill stragglers. */
  async shutdown(graceMs = 1000): Promise<void> {
    this.closing = true;
    const exits = [...this.workers].map(
      (w) => new Promise<void>((resolve) => (w.proc.exitCode !== null || w.proc.signalCode !== null ? resolve() : w.proc.once('exit', () => resolve()))),
    );
    for (const w of this.workers) if (w.proc.connected) w.proc.disconnect();
    const timer = setTimeout(() => this.workers.forEach((w) => this.kill(w)), graceMs);
    await Promise.all(exits);
    clearTimeout(timer);
  }

  private loadTimedOut(): string {
    const modules = Object.values(this.options.handlers).flatMap((h) => (h.kind === 'module' ? [h.path] : []));
    const named = modules.length ? `handler module ${modules.map((m) => printable(m)).join(', ')}` : 'the handler';
    return `${named} did not finish loading within ${formatMs(this.options.loadTimeoutMs)} (an import or top-level await that never settles?); fix it, or give --load-timeout more time`;
  }

  private send(slot: Slot, msg: ToWorker): void {
    if (slot.proc.connected) slot.proc.send(msg);
  }

  private spawn(): Promise<void> {
    // `--exec` batches run inside the coordinator through spawner helpers when they are
    // built; module handlers (and exec without the helper) in forked worker processes.
    let proc: WorkerProcess;
    try {
      const spawner = this.execOnly ? Spawner.start() : null;
      proc = spawner
        ? new InProcessWorker(spawner)
        : fork(CHILD_MAIN, [], { detached: true, stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'json' });
    } catch (err) {
      // Some refusals (ENOMEM) are thrown at once instead of reported by 'error'.
      return Promise.reject(this.cannotStart(err as NodeJS.ErrnoException));
    }
    const slot: Slot = {
      id: `${this.options.idPrefix}w${this.next++}`,
      pid: proc.pid ?? null,
      queue: [],
      avgMs: null,
      headSince: 0,
      groups: new Map(),
      booted: proc instanceof InProcessWorker,
      stoppedSince: null,
      tasksRun: 0,
      ready: false,
      retiring: false,
      proc,
      stderr: '',
    };
    this.workers.add(slot);
    // What a worker that dies before its first line says of a limit (Node's own `pthread_create:
    // Resource temporarily unavailable`), kept apart: the abort's stack trace follows it.
    let limitSaid: string | null = null;
    proc.stderr?.on('data', (b: Buffer) => {
      const text = b.toString();
      if (!slot.booted) limitSaid ??= text.split('\n').find((l) => LIMIT_SAID.test(l))?.trim() ?? null;
      slot.stderr = (slot.stderr + text).slice(-STDERR_KEEP);
    });
    return new Promise((resolve, reject) => {
      // An import that never settles (a top-level await on nothing) would hang the start forever.
      const loading = setTimeout(() => {
        reject(new UsageError(this.loadTimedOut()));
        this.kill(slot);
      }, this.options.loadTimeoutMs);
      proc.on('message', (msg: FromWorker) => {
        if (msg.type === 'ready' || msg.type === 'load-failed') clearTimeout(loading);
      });
      proc.once('exit', () => clearTimeout(loading));
      let bootTimedOut = false;
      const bootTimer = slot.booted
        ? undefined
        : setTimeout(() => {
            bootTimedOut = true;
            if (slot.pid) killGroup(slot.pid, 'SIGKILL');
          }, BOOT_MS);
      bootTimer?.unref();
      proc.on('message', (msg: FromWorker) => {
        if (msg.type === 'booted') {
          slot.booted = true;
          clearTimeout(bootTimer);
        } else if (msg.type === 'ready') {
          slot.ready = true;
          this.loadFailures = 0;
          this.loadKills = 0;
          resolve();
          this.events.idle();
        } else if (msg.type === 'load-failed') {
          reject(new UsageError(errorLine(msg.error).replace(/^UsageError: /, '')));
        } else if (msg.type === 'spawned') {
          if (!slot.queue.includes(msg.token)) return;
          slot.groups.set(msg.token, msg.pgid);
          this.events.started(slot, msg.token);
        } else if (msg.type === 'heartbeat') {
          this.events.heartbeat(msg.token);
        } else if (msg.type === 'done') {
          this.finishAttempt(slot, msg.result, msg.rss);
        } else if (msg.type === 'dropped') {
          const dropped = slots.takeBack(slot, msg.tokens);
          const why = slot.retiring ? 'its worker was being recycled (--max-worker-memory)' : 'taken back unstarted from a worker busy with a slow attempt';
          this.events.dropped(slot, dropped, why);
          if (slot.retiring && slot.queue.length === 0 && slot.proc.connected) slot.proc.disconnect();
        }
      });
      proc.on('error', (err: NodeJS.ErrnoException) => {
        // A worker that could not be started at all: no 'spawn' and no 'exit' follow. Any
        // other error (a send on a closed channel) is reported through 'exit'.
        if (!err.syscall?.startsWith('spawn')) return;
        clearTimeout(bootTimer);
        clearTimeout(loading); // no 'exit' will clear it: a pending load timer would hold the process
        this.workers.delete(slot);
        reject(this.cannotStart(err));
      });
      proc.on('exit', (code, signal) => {
        clearTimeout(bootTimer);
        this.workers.delete(slot);
        const why = signal ? `worker killed by ${signal}` : `worker exited with code ${code}`;
        const detail = slot.stderr.trim().split('\n').pop();
        // Never came up, and hung, named a limit or aborted (Node aborts, often without a word,
        // when it cannot create a thread): the machine's limit, not the handler. One killed from
        // outside before it booted is a worker that died like any other.
        const atLimit = !slot.booted && (bootTimedOut || limitSaid !== null || signal === 'SIGABRT');
        if (atLimit) {
          this.startFailure = neverBooted(bootTimedOut, why, limitSaid);
          reject(this.startFailure);
        } else if (!slot.ready) {
          if (signal && OUTSIDE_KILLS.has(signal)) this.loadKills++;
          else this.loadFailures++;
          reject(new UsageError(`the worker could not start the handler (${why})${detail ? `: ${detail}` : ''}`));
        }
        const { running, queued } = slots.emptyQueue(slot, slot.groups);
        for (const pgid of slot.groups.values()) killGroup(pgid, 'SIGKILL');
        slot.groups.clear();
        // A forked worker leads its own group, where its module handler's children are: they
        // must not outlive it (its attempt may run again elsewhere at once).
        if (slot.pid) killGroup(slot.pid, 'SIGKILL');
        // Replace the dead once the pool is running; a handler that keeps failing to load
        // (MAX_LOAD_FAILURES in a row, or MAX_LOAD_KILLS kills before it was ready) is given
        // up on, and the coordinator ends the run.
        // One that never came up is not replaced: the machine is at a limit (see cannotStart).
        if (this.running && !this.closing && !atLimit && this.loadFailures < MAX_LOAD_FAILURES && this.loadKills < MAX_LOAD_KILLS) void this.replace();
        this.events.exited(slot, running, detail ? `${why}: ${detail}` : why, queued, signal);
      });
      const watchMemory = this.options.maxWorkerMemory !== null;
      this.send(slot, { type: 'load', handlers: this.options.handlers, killGraceMs: this.options.killGraceMs, watchMemory });
    });
  }

  private finishAttempt(slot: Slot, msg: DoneMessage, rss: number): void {
    if (!slots.endHead(slot, msg.token, msg.durationMs, monotonicMs())) return;
    slot.groups.delete(msg.token);
    const { maxTasksPerWorker, maxWorkerMemory } = this.options;
    const tooBig = maxWorkerMemory !== null && rss > maxWorkerMemory;
    const worn = (maxTasksPerWorker && slot.tasksRun >= maxTasksPerWorker) || tooBig;
    if (worn && !this.closing && !slot.retiring) {
      slot.retiring = true; // no new attempts; it exits once its queue is empty
      if (tooBig && slot.queue.length > 1) this.drop(slot); // and runs none of the queued ones
    }
    this.events.done(slot, msg);
    // Exits by itself once disconnected; 'exit' spawns the replacement.
    if (slot.retiring && slot.queue.length === 0 && slot.proc.connected) slot.proc.disconnect();
  }

  private async replace(): Promise<void> {
    try {
      await this.spawn();
    } catch (err) {
      // A handler that loaded once and now fails to load: the next replacement is tried
      // when this one exits, and the coordinator ends when no worker is left. One that could
      // not be started at all is not retried: the pool runs on with one fewer, and says so.
      if ((err as Error).name === 'ResourceError') this.events.shrunk(`a worker that died could not be replaced: ${(err as Error).message}`);
    }
  }

  /** The error for a worker the machine would not start, naming the limit and the way out. */
  private cannotStart(err: NodeJS.ErrnoException): ResourceError {
    this.startFailure = refused(err);
    return this.startFailure;
  }

  get size(): number {
    return this.workers.size;
  }
}
