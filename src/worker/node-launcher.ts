import { spawn, type ChildProcess } from 'node:child_process';
import { createReadStream } from 'node:fs';
import type { Writable } from 'node:stream';
import { describeE2big } from './arg-limits.js';
import type { TaskInput } from './task-bytes.js';
import { Launch, type Launched, type Launcher, type LaunchRequest } from './launcher.js';
import { oomScoreInherited, raiseOomScore } from './oom-score.js';
import { OutputCapture } from './output-capture.js';
import { PrintCopy } from './print-copy.js';

/**
 * Writes a `--pipe` command's input to its stdin and closes it. A command that stops reading
 * early (`head -1`) is its own business: the broken pipe is not an error of the attempt.
 */
function feed(into: Writable, input: TaskInput): void {
  into.on('error', () => {});
  if (input.kind === 'bytes') {
    into.end(input.data);
    return;
  }
  if (input.end <= input.start) {
    into.end();
    return;
  }
  const from = createReadStream(input.path, { start: input.start, end: Number.isFinite(input.end) ? input.end - 1 : undefined });
  from.on('error', () => into.destroy());
  from.pipe(into);
}

/** Streams a straggler (a background grandchild holding the pipe) may keep open after exit. */
const PIPE_LINGER_MS = 200;

interface Queued {
  request: LaunchRequest;
  launch: Launch;
}

/**
 * Commands started with Node's own spawn, where the spawner helper is not built. It holds
 * the slot's queue like the helper: the next command starts in the same callback that sees
 * the one before exit, before that one's output is collected and reported. Output goes
 * through pipes into an OutputCapture (a tail kept whatever the disk says).
 */
export class NodeLauncher implements Launcher {
  private readonly queue: Queued[] = [];
  private running = false;

  launch(request: LaunchRequest): Launch {
    const launch = new Launch();
    this.queue.push({ request, launch });
    if (!this.running) this.next();
    return launch;
  }

  dropQueued(): void {
    for (const q of this.queue.splice(0)) q.launch.end({ kind: 'dropped' });
  }

  private next(): void {
    const q = this.queue.shift();
    this.running = q !== undefined;
    if (!q) return;
    const { argv, fallback } = q.request;
    void this.run(argv, q, fallback === null)
      .then(async (end) => {
        // Not found, not executable, a script without #!: the shell's own handling and message.
        // Not arguments too long for exec: the shell line holds them too (the queue goes on).
        if (end.kind === 'not-started' && fallback !== null) {
          if (end.code !== 'E2BIG') return this.run(['/bin/sh', '-c', fallback], q, true);
          this.next();
        }
        return end;
      })
      .then((end) => q.launch.end(end));
  }

  /**
   * Runs argv; the next queued command starts as soon as this one exits, or fails to start
   * when that is the request's `last` try (a direct argv's fallback comes first).
   */
  private run(argv: string[], q: Queued, last: boolean): Promise<Launched> {
    const { vars, logFile, stdin, print } = q.request;
    let child: ChildProcess;
    try {
      child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'], env: { ...process.env, ...vars } });
    } catch (err) {
      // Node throws, rather than emits, the errors of exec it does not expect (E2BIG: an
      // argument over the system's limit): the attempt fails, the worker carries on.
      if (last) queueMicrotask(() => this.next());
      return Promise.resolve(notStarted(argv, q.request, err as NodeJS.ErrnoException));
    }
    const capture = new OutputCapture(logFile);
    const copy = print ? new PrintCopy(print) : null;
    if (child.pid !== undefined) {
      // Node's spawn runs nothing between fork and exec: a command the coordinator starts
      // itself is raised just after its start (a forked worker's inherit the worker's).
      if (!oomScoreInherited()) raiseOomScore(child.pid);
      q.launch.started(child.pid, Date.now());
    }
    if (stdin && child.stdin) feed(child.stdin, stdin);
    child.stdout!.on('data', (b: Buffer) => {
      capture.write(b);
      copy?.write('out', b);
    });
    let wroteStderr = false;
    child.stderr!.on('data', (b: Buffer) => {
      if (b.length) wroteStderr = true;
      capture.write(b);
      copy?.write('err', b);
    });
    return new Promise<Launched>((resolve) => {
      let exit: { code: number | null; signal: NodeJS.Signals | null; at: number } | null = null;
      child.on('error', (err: NodeJS.ErrnoException) => {
        if (exit) return; // it ran: its end is what counts
        resolve(notStarted(argv, q.request, err));
        if (last) this.next();
      });
      child.on('exit', (code, signal) => {
        exit = { code, signal, at: Date.now() };
        this.next();
        setTimeout(() => {
          child.stdout!.destroy();
          child.stderr!.destroy();
        }, PIPE_LINGER_MS).unref();
      });
      child.on('close', () => {
        if (!exit) return; // never started: reported by 'error'
        const { outputTail, logPath, note } = capture.finish();
        const unprinted = copy?.close() ?? null;
        resolve({ kind: 'ran', code: exit.code, signal: exit.signal, outputTail, logPath, note, cause: null, unprinted, endedAt: exit.at, lingers: null, wroteStderr });
      });
    });
  }
}

/** A command that could not start; one whose arguments exec refused (E2BIG) says which, and is not retried. */
function notStarted(argv: string[], request: LaunchRequest, err: NodeJS.ErrnoException): Launched {
  const code = err.code ?? 'ERROR';
  if (code === 'E2BIG') return { kind: 'not-started', code, message: `could not start ${argv[0]}: ${describeE2big(request.argv, request.fallback, request.vars)}`, retryable: false };
  return { kind: 'not-started', code, message: `could not start ${argv[0]}: ${err.message}` };
}
