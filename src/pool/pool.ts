/** The worker processes' lifecycles (start, replace the dead, recycle the worn, shut down) behind the API the coordinator calls. */
import { UsageError, errorLine, type ResourceError } from '../errors.js';
import { monotonicMs } from '../wall-steps.js';
import { attemptMark } from '../worker/attempt-processes.js';
import { OWNER_VAR } from '../worker/owner-processes.js';
import { processStopped } from '../worker/kill-group.js';
import type { FromWorker, TaskMessage } from '../worker/protocol.js';
import { handBack, killWorker } from './dead-worker.js';
import type { PoolOptions } from './pool-options.js';
import { InProcessWorker } from './in-process-worker.js';
import type { PoolEvents, PoolWorker } from './pool-events.js';
import * as slots from './slots.js';
import { notLoaded, refused } from './start-failure.js';
import { BootWatch, LoadTally } from './start-watch.js';
import { pooledWorker, route, send, type PooledWorker } from './worker-messages.js';
import { startWorkerProcess, type WorkerProcess } from './worker-process.js';
import { GroupBounds, type PoolGroups } from './group-bounds.js';

export type { PoolEvents, PoolWorker } from './pool-events.js';
export type { PoolOptions } from './pool-options.js';

const STDERR_KEEP = 2048;

/**
 * Owns the worker processes: fork, load the handler, replace the dead, recycle the
 * worn, shut down. Each worker leads its own process group (`detached`), so a terminal's
 * Ctrl-C reaches only the coordinator, which decides how the workers stop.
 */
export class WorkerPool {
  private readonly workers = new Set<PooledWorker>();
  /** Each handle this pool gave out, to the worker it names (a dead one's too: what is sent to it goes nowhere). */
  private readonly handles = new WeakMap<PoolWorker, PooledWorker>();
  private next = 1;
  private closing = false;
  private running = false;
  /** Workers grow() started that have not yet loaded or failed to. */
  private growing = 0;
  private readonly loads = new LoadTally();
  /** Why the last worker that could not be started at all (no process to be had) failed. */
  private startFailure: ResourceError | null = null;
  /** Many items per attempt: each stage's bound, and how a claim shapes its groups. */
  readonly groups: PoolGroups;
  private readonly groupBounds: GroupBounds;
  /** Dead workers' leftovers being killed: their attempts are reported once each is done. */
  private readonly sweeps = new Set<Promise<void>>();
  private events: PoolEvents = { done() {}, dropped() {}, exited() {}, started() {}, idle() {}, heartbeat() {}, ran() {}, shrunk() {} };
  private readonly execOnly: boolean;
  /** The most workers it holds: its -j, or more once `splitdance set -j` widens it. */
  private maxSize: number;

  constructor(private readonly options: PoolOptions) {
    this.maxSize = options.size;
    this.execOnly = Object.values(options.handlers).every((h) => h.kind === 'exec');
    this.groups = this.groupBounds = new GroupBounds(options.handlers);
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
  async start(count = this.maxSize): Promise<void> {
    const loads = Array.from({ length: Math.max(1, Math.min(count, this.maxSize)) }, () => this.spawn());
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
    const wanted = Math.min(target, this.maxSize);
    const missing = wanted - this.workers.size;
    if (missing <= 0) return null;
    this.growing += missing;
    const results = await Promise.allSettled(
      Array.from({ length: missing }, () =>
        this.spawn().finally(() => {
          this.growing--;
          if (!this.closing) this.events.idle(); // the others' windows open again (freePlaces)
        }),
      ),
    );
    const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected' && (r.reason as Error).name === 'ResourceError');
    if (!refused) return null;
    return `started ${this.workers.size} of ${wanted} workers and runs with those: ${(refused.reason as Error).message}`;
  }

  /** Null while the pool has a worker; else why it has none: why none could be started, if that is why. */
  whyEmpty(): Error | null {
    return this.workers.size > 0 ? null : (this.startFailure ?? new Error('every worker died and none could be restarted; see the errors above'));
  }

  /** One entry per attempt the pool can take now: a worker appears once per free place in its window. */
  freePlaces(): PoolWorker[] {
    // While the pool grows (grow), a ready worker takes no attempt to queue behind its running
    // one: the workers still loading, ready in a moment, should get it instead. Places of
    // many tasks each are fewer (placesLeft).
    const { perPlace } = this.groups.claimShape();
    return slots.freePlaces(this.workers, this.options.maxTasksPerWorker, monotonicMs(), this.growing > 0 ? 1 : null, perPlace);
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

  /** How many workers hold an attempt (running, or about to). */
  busyWorkers(): number {
    return [...this.workers.values()].filter((w) => w.queue.length > 0).length;
  }

  /** Workers holding queued attempts behind one that runs long while another is idle: the caller takes those back (`drop`). */
  stuck(ms: number): PoolWorker[] {
    return slots.stuck(this.workers, ms, monotonicMs());
  }

  /** Workers whose process (a forked worker, an `--exec` worker's spawner helper) has been stopped (SIGSTOP) for `ms` or more while holding attempts: see slots.ts. Looked at once a poll. */
  stopped(ms: number, now = Date.now()): PoolWorker[] {
    return slots.stopped(this.workers, ms, now, processStopped);
  }

  /** Asks the worker to give back its queued attempts (reported through `dropped`). */
  drop(worker: PoolWorker): void {
    send(this.handles.get(worker), { type: 'drop' });
  }

  /** Asks every worker holding queued attempts to give them back (the run is stopping). */
  dropQueued(): void {
    for (const w of this.workers) if (w.queue.length > 1) this.drop(w);
  }

  /** Queues attempts on the worker, in order, in one message. */
  dispatch(worker: PoolWorker, tasks: TaskMessage[]): void {
    const w = this.handles.get(worker);
    if (!w) return;
    slots.queueAttempts(w, tasks.map((t) => t.token), monotonicMs(), tasks.map((t) => 1 + (t.more?.length ?? 0)));
    for (const t of tasks) t.slot = w.slot;
    // The mark is made only if the worker dies (dead-worker.ts): its owner is this run's now.
    const owner = process.env[OWNER_VAR];
    for (const t of tasks) if (this.reportsStarts(t.stage)) w.marks.set(t.token, () => attemptMark(t, owner));
    send(w, { type: 'run', tasks });
  }

  /** Stops one running attempt of the worker (its timeout). */
  abort(worker: PoolWorker, token: number): void {
    send(this.handles.get(worker), { type: 'abort', token, reason: 'timeout' });
  }

  /** A shutdown: stops every attempt the worker started and takes back its queued ones (see `dropped`). */
  interrupt(worker: PoolWorker): void {
    if (worker.queue.length) send(this.handles.get(worker), { type: 'abort', token: null, reason: 'shutdown' });
  }

  /** SIGKILLs the worker's process group and its exec attempts' groups. */
  kill(worker: PoolWorker): void {
    killWorker(this.handles.get(worker));
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
    await Promise.all(this.sweeps);
  }

  /**
   * Starts one worker and loads the handler: resolves once it is ready; rejects with a
   * UsageError when the handler cannot load, a ResourceError when the machine gives no process.
   */
  private spawn(): Promise<void> {
    let proc: WorkerProcess;
    try {
      proc = startWorkerProcess(this.execOnly, this.options.nodeSpawn ?? false, this.options.cwd);
    } catch (err) {
      // Some refusals (ENOMEM) are thrown at once instead of reported by 'error'.
      return Promise.reject(this.cannotStart(err as NodeJS.ErrnoException));
    }
    const worker = pooledWorker(`${this.options.idPrefix}w${this.next++}`, slots.freeSlot(this.workers), proc);
    this.workers.add(worker);
    this.handles.set(worker, worker);
    return new Promise((resolve, reject) => {
      let loadEnded = false; // timed out or failed: this worker's start is answered
      const loading = setTimeout(() => {
        loadEnded = true;
        reject(notLoaded(this.options.handlers, this.options.loadTimeoutMs));
        this.kill(worker);
      }, this.options.loadTimeoutMs);
      proc.once('exit', () => clearTimeout(loading));
      const boot = new BootWatch(worker.pid, proc instanceof InProcessWorker);
      proc.stderr?.on('data', (b: Buffer) => {
        const text = b.toString();
        boot.heard(text);
        worker.stderr = (worker.stderr + text).slice(-STDERR_KEEP);
      });
      proc.on('message', (msg: FromWorker) => {
        if (msg.type === 'booted') {
          boot.up();
        } else if (msg.type === 'ready') {
          clearTimeout(loading);
          worker.ready = true;
          this.groupBounds.heard(msg.maxItems);
          this.loads.loaded();
          resolve();
          this.events.idle();
        } else if (msg.type === 'load-failed') {
          clearTimeout(loading);
          loadEnded = true;
          reject(new UsageError(errorLine(msg.error).replace(/^UsageError: /, '')));
        } else {
          route(worker, msg, this.events, this.options, this.closing);
        }
      });
      proc.on('error', (err: NodeJS.ErrnoException) => {
        // A worker that could not be started at all: no 'spawn' and no 'exit' follow. Any
        // other error (a send on a closed channel) is reported through 'exit'.
        if (!err.syscall?.startsWith('spawn')) return;
        boot.end();
        clearTimeout(loading); // no 'exit' will clear it: a pending load timer would hold the process
        this.workers.delete(worker);
        reject(this.cannotStart(err));
      });
      proc.on('exit', (code: number | null, signal: NodeJS.Signals | null) => {
        boot.end();
        // Before the pool runs, the start-up waits on this worker: another one takes its place.
        const another = loadEnded || this.running ? null : () => this.spawn().then(resolve, reject);
        this.exited(worker, code, signal, boot, reject, another);
      });
      const { handlers, killGraceMs, maxWorkerMemory } = this.options;
      send(worker, { type: 'load', handlers, killGraceMs, watchMemory: maxWorkerMemory !== null });
    });
  }

  /**
   * A worker died: a start that failed, the attempts it held handed back, a replacement. One
   * killed from outside (SIGKILL: a user, the OOM killer) before its handler was ready says
   * nothing about the handler: during the start-up, `another` worker takes its place (in a
   * campaign, 40 of 76 such kills hit the first worker, which ended runs with exit 2).
   */
  private exited(worker: PooledWorker, code: number | null, signal: NodeJS.Signals | null, boot: BootWatch, reject: (err: Error) => void, another: (() => void) | null): void {
    this.workers.delete(worker);
    const why = signal ? `worker killed by ${signal}` : `worker exited with code ${code}`;
    const detail = worker.stderr.trim().split('\n').pop();
    const atLimit = boot.failure(why, signal);
    if (atLimit) {
      this.startFailure = atLimit;
      reject(this.startFailure);
    } else if (!worker.ready) {
      const killed = this.loads.died(signal);
      if (killed && another && !this.closing && !this.loads.givenUp) another();
      else reject(new UsageError(`the worker could not start the handler (${this.loads.why(why)})${detail ? `: ${detail}` : ''}`));
    }
    // Replace the dead once the pool is running; a handler that keeps failing to load is
    // given up on (LoadTally), and the coordinator ends the run. One that never came up is
    // not replaced: the machine is at a limit (see cannotStart).
    const replace = () => {
      if (this.running && !this.closing && !atLimit && !this.loads.givenUp) void this.replace();
    };
    const sweep = handBack(worker, (running, queued) => this.events.exited(worker, running, detail ? `${why}: ${detail}` : why, queued, signal), replace);
    if (sweep) {
      this.sweeps.add(sweep);
      const swept = () => this.sweeps.delete(sweep);
      sweep.then(swept, swept);
    }
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

  /** `splitdance set -j N` above the pool's -j: it may hold N workers from now on (`grow` starts them). Never narrows. */
  widen(size: number): void {
    this.maxSize = Math.max(this.maxSize, size);
  }
}
