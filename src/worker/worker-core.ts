import { serializeError } from '../errors.js';
import type { Handler } from './handler-types.js';
import { killGroup } from './kill-group.js';
import { loadHandler } from './load-handler.js';
import type { DoneMessage, FromWorker, HandlerSpec, TaskMessage, ToWorker } from './protocol.js';
import { runExec } from './run-exec.js';
import { runModule } from './run-module.js';
import type { Spawner } from './spawner.js';

export interface WorkerHost {
  /** Hands a message to the coordinator; `written` once it has left (before the next attempt starts). */
  send(msg: FromWorker, written?: () => void): void;
  /** The spawner helper `--exec` commands start through (null: Node's spawn). */
  spawner(): Spawner | null;
  /** Peak RSS of the process the attempts run in, bytes (for --max-worker-memory). */
  peakRss(): number;
  /**
   * Whether the coordinator needs each exec attempt's process group (`spawned`) to kill it
   * if this worker dies; not when a spawner helper of this worker does that itself.
   */
  reportGroups(viaSpawner: boolean): boolean;
  /**
   * A module attempt has ended (`aborted`: by a timeout or shutdown): stop what its handler
   * left running. Only a worker process whose group holds its handlers' children has this.
   */
  afterModuleAttempt?(aborted: boolean): Promise<void>;
}

/**
 * What a worker does, wherever it lives: loads the handlers once, then runs one attempt at
 * a time, in the order the coordinator queued them. Each outcome is handed to the channel
 * before the next attempt starts, so the coordinator always knows which attempt is
 * running: a crash, a timeout or a process group is never pinned on the wrong one. It
 * never touches the store and never decides retries.
 */
export class WorkerCore {
  /** Per stage ('' without stages): the spec, and the module's default export once loaded. */
  private readonly handlers = new Map<string, { spec: HandlerSpec; fn: Handler | null }>();
  private killGraceMs = 2000;
  private watchMemory = false;
  private current: { token: number; pgid: number | null; abort(reason: string): void } | null = null;
  private readonly queue: TaskMessage[] = [];
  private draining = false;
  private stopped = false;

  constructor(private readonly host: WorkerHost) {}

  handle(msg: ToWorker): void {
    if (msg.type === 'load') void this.load(msg);
    else if (msg.type === 'run') {
      this.queue.push(...msg.tasks);
      if (!this.draining) void this.drain();
    } else if (msg.type === 'abort') {
      if (msg.reason === 'shutdown') this.dropQueued();
      if (this.current?.token === msg.token) this.current.abort(msg.reason);
    } else if (msg.type === 'drop') this.dropQueued();
  }

  /** The worker's end (its coordinator or its helper is gone): kill what runs; nothing more starts. */
  killRunning(): void {
    this.stopped = true;
    this.queue.length = 0;
    if (this.current?.pgid) killGroup(this.current.pgid, 'SIGKILL');
  }

  private async load({ handlers: specs, killGraceMs, watchMemory }: Extract<ToWorker, { type: 'load' }>): Promise<void> {
    this.killGraceMs = killGraceMs;
    this.watchMemory = watchMemory;
    try {
      for (const [stage, spec] of Object.entries(specs)) {
        this.handlers.set(stage, { spec, fn: spec.kind === 'module' ? await loadHandler(spec.path) : null });
      }
      this.host.send({ type: 'ready' });
    } catch (err) {
      this.host.send({ type: 'load-failed', error: serializeError(err) });
    }
  }

  /** Hands the queued attempts back unstarted. */
  private dropQueued(): void {
    if (this.queue.length) this.host.send({ type: 'dropped', tokens: this.queue.splice(0).map((t) => t.token) });
  }

  /** Runs the queued attempts one by one. */
  private async drain(): Promise<void> {
    this.draining = true;
    while (this.queue.length && !this.stopped) await this.run(this.queue.shift()!);
    this.draining = false;
  }

  private async run(task: TaskMessage): Promise<void> {
    const h = this.handlers.get(task.stage);
    if (!h) throw new Error(`no handler loaded for stage "${task.stage}"`); // the coordinator sends only stages it loaded
    // Set before the attempt starts, so a message arriving meanwhile sees it running.
    const attempt: NonNullable<WorkerCore['current']> = { token: task.token, pgid: null, abort: () => {} };
    let aborted = false;
    this.current = attempt;
    const running =
      h.spec.kind === 'exec'
        ? runExec(h.spec.template, task, this.killGraceMs, taskVars(task), this.host.spawner(), (pgid, viaSpawner) => {
            attempt.pgid = pgid;
            if (this.host.reportGroups(viaSpawner)) this.host.send({ type: 'spawned', token: task.token, pgid });
          })
        : runModule(h.fn!, task, () => this.host.send({ type: 'heartbeat', token: task.token }));
    attempt.abort = (reason) => {
      aborted = true;
      running.abort(reason);
    };
    const outcome = await running.done;
    if (h.spec.kind === 'module') await this.host.afterModuleAttempt?.(aborted);
    this.current = null;
    const { ok, result: value, error, exitCode, signal, outputTail, logPath, durationMs } = outcome;
    const result: DoneMessage = { token: task.token, ok, result: value, error, exitCode, signal, outputTail, logPath, durationMs };
    // Handed to the channel before anything else runs here: if the next attempt kills this
    // process, this outcome has left already.
    await new Promise<void>((written) => this.host.send({ type: 'done', result, rss: this.watchMemory ? this.host.peakRss() : 0 }, written));
  }
}

/** What an exec attempt gets over the worker's environment. */
function taskVars(task: TaskMessage): Record<string, string> {
  return {
    SPLITDANCE_KEY: task.key,
    SPLITDANCE_PATH: task.payload.path,
    SPLITDANCE_BATCH: task.batch,
    SPLITDANCE_ATTEMPT: String(task.attempt),
    ...(task.stage ? { SPLITDANCE_STAGE: task.stage } : {}),
  };
}
