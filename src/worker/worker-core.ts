import { serializeError, type SerializedError } from '../errors.js';
import { discardOutput, finishOutput, prepareOutput } from '../output/commit-output.js';
import type { FolderId } from '../output/output-folders.js';
import type { OutputPaths } from '../output/output-path.js';
import { taskVars } from './attempt-processes.js';
import { HeartbeatThrottle } from './heartbeat-throttle.js';
import type { Launcher } from './launcher.js';
import { loadHandler, type LoadedHandler } from './load-handler.js';
import { NodeLauncher } from './node-launcher.js';
import type { DoneMessage, FromWorker, HandlerSpec, TaskMessage, ToWorker } from './protocol.js';
import { notRun, runExec } from './run-exec.js';
import { runModule } from './run-module.js';
import { intoSegment } from './log-segments.js';

export interface WorkerHost {
  /** Hands a message to the coordinator; `written` once it has left. */
  send(msg: FromWorker, written?: () => void): void;
  /** The launcher `--exec` commands start through (launcher.ts). */
  launcher(): Launcher;
  /** Peak RSS of the process the attempts run in, bytes (for --max-worker-memory). */
  peakRss(): number;
  /**
   * A module attempt has ended (`aborted`: by a timeout or shutdown): stop what its handler
   * left running. Only a worker process whose group holds its handlers' children has this.
   */
  afterModuleAttempt?(aborted: boolean): Promise<void>;
}

/** An attempt handed on: to the launcher (exec, maybe queued there) or running (module). */
interface Active {
  token: number;
  kind: 'exec' | 'module';
  output: OutputPaths | null;
  abort(reason: string): void;
  kill(): void;
}

/**
 * What a worker does, wherever it lives: loads the handlers once, then runs the attempts the
 * coordinator queued, in order, one at a time. `--exec` attempts are handed to the launcher
 * as soon as they arrive: it starts each the moment the one before exits, so the slot never
 * waits for this process or the coordinator, and says when each started (`spawned`, which
 * also gives the coordinator its process group). A module attempt starts once everything
 * before it has been reported. Outcomes are reported in order, each before anything after it
 * is. It never touches the store and never decides retries.
 */
export class WorkerCore {
  /** Per stage ('' without stages): the spec, and the module's exports once loaded. */
  private readonly handlers = new Map<string, { spec: HandlerSpec; mod: LoadedHandler | null }>();
  private killGraceMs = 2000;
  private watchMemory = false;
  /** Attempts not handed on yet. */
  private readonly queue: TaskMessage[] = [];
  /** Attempts handed on and not reported yet, in order. */
  private readonly active: Active[] = [];
  /** The last report in line: each waits for the one before. */
  private reported: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Where `--pipe` commands start (made on the first one). */
  private pipeLauncher: Launcher | undefined;

  constructor(private readonly host: WorkerHost) {}

  handle(msg: ToWorker): void {
    if (msg.type === 'load') void this.load(msg);
    else if (msg.type === 'run') {
      this.queue.push(...msg.tasks);
      this.pump();
    } else if (msg.type === 'abort') {
      if (msg.token === null) {
        // A shutdown: nothing more starts, and everything handed on is stopped.
        this.dropQueued();
        for (const a of this.active) a.abort(msg.reason);
      } else this.active.find((a) => a.token === msg.token)?.abort(msg.reason);
    } else if (msg.type === 'drop') this.dropQueued();
  }

  /** The worker's end (its coordinator or its helper is gone): kill what runs; nothing more starts. */
  killRunning(): void {
    this.stopped = true;
    this.queue.length = 0;
    for (const a of this.active) {
      a.kill();
      if (a.output) discardOutput(a.output); // no one is left to commit it
    }
  }

  private async load({ handlers: specs, killGraceMs, watchMemory }: Extract<ToWorker, { type: 'load' }>): Promise<void> {
    this.killGraceMs = killGraceMs;
    this.watchMemory = watchMemory;
    try {
      const maxItems: Record<string, number> = {};
      for (const [stage, spec] of Object.entries(specs)) {
        const mod = spec.kind === 'module' ? await loadHandler(spec.path) : null;
        this.handlers.set(stage, { spec, mod });
        maxItems[stage] = groupBound(spec, mod);
      }
      this.host.send({ type: 'ready', maxItems });
    } catch (err) {
      this.host.send({ type: 'load-failed', error: serializeError(err) });
    }
  }

  /** Hands the attempts not started back: those here at once, those queued in the launcher when it gives them back. */
  private dropQueued(): void {
    if (this.queue.length) this.host.send({ type: 'dropped', tokens: this.queue.splice(0).map((t) => t.token) });
    if (this.active.some((a) => a.kind === 'exec')) this.host.launcher().dropQueued();
  }

  /** Hands on what may start: exec attempts straight to the launcher, a module attempt once nothing is ahead of it. */
  private pump(): void {
    while (this.queue.length && !this.stopped) {
      const task = this.queue[0]!;
      const h = this.handlers.get(task.stage);
      if (!h) throw new Error(`no handler loaded for stage "${task.stage}"`); // the coordinator sends only stages it loaded
      const blocked = h.spec.kind === 'exec' ? this.active.some((a) => a.kind === 'module') : this.active.length > 0;
      if (blocked) return;
      this.queue.shift();
      if (h.spec.kind === 'exec') this.startExec(h.spec, task);
      else this.startModule(h.mod!, task);
    }
  }

  private startExec({ template, pipe: piped, group }: Extract<HandlerSpec, { kind: 'exec' }>, task: TaskMessage): void {
    const { why, folder } = prepared(task);
    const pipe = piped === true;
    // --pipe feeds the command's stdin, which only Node's spawn does here (the helper gives /dev/null).
    const launcher = pipe ? (this.pipeLauncher ??= new NodeLauncher()) : this.host.launcher();
    const running = why ? notRun(task.token, why) : runExec(template, task, this.killGraceMs, taskVars(task), launcher, pipe, group?.mode);
    running.onStart((pgid) => this.host.send({ type: 'spawned', token: task.token, pgid }));
    const active: Active = { token: task.token, kind: 'exec', output: task.output, abort: () => running.abort(), kill: () => running.kill() };
    this.active.push(active);
    this.report(active, withOutput(task, folder, running.done, 'the command must write it to {out}', this.host));
  }

  private startModule(mod: LoadedHandler, task: TaskMessage): void {
    // One task goes to the default export when there is one; a group (or a module with only `batch`) to `batch`.
    const fn = !task.more?.length && mod.fn ? mod.fn : { batch: mod.batch! };
    let aborted = false;
    const { why, folder } = prepared(task);
    // Made on the first ctx.heartbeat(): an attempt that never calls it costs nothing.
    let heartbeat: HeartbeatThrottle | undefined;
    const beat = () => (heartbeat ??= new HeartbeatThrottle(() => this.host.send({ type: 'heartbeat', token: task.token }))).beat();
    const running = why ? notRun(task.token, why) : runModule(fn, task, beat);
    const active: Active = {
      token: task.token,
      kind: 'module',
      output: task.output,
      abort: (reason) => {
        aborted = true;
        running.abort(reason);
      },
      kill: () => {},
    };
    this.active.push(active);
    this.report(
      active,
      withOutput(
        task,
        folder,
        running.done.then(async (outcome) => {
          heartbeat?.stop();
          await this.host.afterModuleAttempt?.(aborted);
          return outcome;
        }),
        'the handler must write it to task.out',
        this.host,
      ),
    );
  }

  /**
   * Reports the attempt's outcome after every earlier one's: a crash, a timeout or a process
   * group is then never pinned on the wrong attempt. Given back unstarted, it is `dropped`.
   */
  private report(active: Active, done: Promise<DoneMessage | 'dropped'>): void {
    void done.then((outcome) => {
      if (outcome === 'dropped') {
        this.forget(active);
        if (!this.stopped) this.host.send({ type: 'dropped', tokens: [active.token] });
      }
    });
    this.reported = this.reported.then(async () => {
      const ended = await done;
      if (ended === 'dropped') return;
      // Its log into this process's segment (log-segments.ts), one attempt at a time, as reported.
      const result = ended.logPath ? { ...ended, logPath: intoSegment(ended.logPath) } : ended;
      // Handed to the channel before a module attempt after it starts: if that one kills this
      // process, this outcome has left already.
      await new Promise<void>((written) => this.host.send({ type: 'done', result, rss: this.watchMemory ? this.host.peakRss() : 0 }, written));
      this.forget(active);
    });
  }

  private forget(active: Active): void {
    const i = this.active.indexOf(active);
    if (i >= 0) this.active.splice(i, 1);
    this.pump();
  }
}

/** At most how many items one attempt of this handler runs: a group's bound, or 1. */
function groupBound(spec: HandlerSpec, mod: LoadedHandler | null): number {
  if (spec.kind === 'exec') return spec.group?.max ?? 1;
  if (!mod?.batch) return 1;
  return Math.min(spec.maxItems ?? DEFAULT_MAX_ITEMS, mod.maxItems ?? Infinity);
}

/** A `batch` export's bound when neither `--max-items` nor the module's `maxItems` gives one (SPEC §10). */
const DEFAULT_MAX_ITEMS = 64;

/** The task's declared output made ready (its folders made and walked): the folder it goes in, or why the attempt cannot run. */
function prepared(task: TaskMessage): { why: SerializedError | null; folder: FolderId | null } {
  if (!task.output) return { why: null, folder: null };
  const ready = prepareOutput(task.output);
  return 'error' in ready ? { why: ready.error, folder: null } : { why: null, folder: ready.folder };
}

/**
 * The outcome once a declared output is synced (success) or removed (anything else). A success
 * says `ran` first: a slow disk's sync (seconds on a busy one) is not the command's time.
 */
function withOutput<T extends DoneMessage | 'dropped'>(task: TaskMessage, folder: FolderId | null, done: Promise<T>, how: string, host: WorkerHost): Promise<T> {
  const out = task.output;
  if (!out) return done;
  return done.then(async (o) => {
    if (o === 'dropped') return o;
    if (o.ok) host.send({ type: 'ran', token: task.token });
    return (await finishOutput(out, o, how, folder)) as T;
  });
}
