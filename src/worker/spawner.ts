import { spawn, spawnSync, type ChildProcessByStdio } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { constants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { inPackage } from '../package-root.js';
import type { Launch } from './launcher.js';

/**
 * Built from src/worker/spawner.c by `npm run build` when a C compiler is present; the same
 * <root>/dist/native/spawner wherever this module runs from.
 */
const BINARY = inPackage('dist/native/spawner');

export type SpawnerEnd =
  /**
   * The command ran: its raw wait status, the bytes it wrote to its log, when it ended (ms),
   * whether processes of its group were left running then, whether it wrote anything on
   * stderr (null: not known, its output was discarded), and why its log could not be created
   * (errno; its output was discarded), if it could not.
   */
  | { kind: 'exited'; status: number; written: number; endedAt: number; lingers: boolean; wroteStderr: boolean | null; logErrno: number | null }
  /** It could not start (errno), e.g. no such command; nothing ran. */
  | { kind: 'spawn-failed'; errno: number }
  /** Given back unstarted (dropQueued). */
  | { kind: 'dropped' }
  /** The spawner itself died (by `signal`, if one killed it); whether the command ran is unknown. */
  | { kind: 'spawner-died'; signal: NodeJS.Signals | null };

/** What `spawner --check` prints: a binary from another version of spawner.c is not used. */
export const SPAWNER_PROTOCOL = 'splitdance-spawner protocol 3';

interface Pending {
  /** Where its start is told. */
  launch: Pick<Launch, 'started'>;
  /** Why its log could not be created (errno), once the helper said so. */
  logErrno: number | null;
  resolve(end: SpawnerEnd): void;
}

/**
 * The worker's side of spawner.c: one long-lived helper per slot that runs its commands one
 * after another with a vfork instead of forking this Node process for each, starting
 * each queued command the moment the one before exits (see spawner.c for why and for the
 * protocol). `Spawner.start()` is null when the helper is not built, does not run here,
 * speaks another protocol version, or SPLITDANCE_SPAWNER=node asks for Node's own spawn.
 */
export class Spawner {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private buffered = '';
  private exited = false;
  /** The signal that killed the helper, once it is gone. */
  private signal: NodeJS.Signals | null = null;
  private readonly exitListeners: ((code: number | null, signal: NodeJS.Signals | null) => void)[] = [];
  private readonly spawnListeners: (() => void)[] = [];
  private running = false;
  private outbox = '';
  private failedStart: NodeJS.ErrnoException | null = null;

  private static usable: boolean | undefined;
  /** Helpers this process has started. */
  private static started = 0;

  /**
   * Whether the helper can be used: built, runs on this machine (a binary copied from
   * another platform would not), speaks this version's protocol (a binary left from another
   * build would misread requests), and not turned off with SPLITDANCE_SPAWNER=node.
   */
  static available(): boolean {
    if (process.env.SPLITDANCE_SPAWNER === 'node') return false;
    Spawner.usable ??= speaksProtocol(BINARY);
    return Spawner.usable;
  }

  /** `cwd`: where the helper, and so every command it starts, runs (default: this process's). */
  static start(cwd?: string): Spawner | null {
    if (!Spawner.available()) return null;
    // Its own process group: a kill aimed at the worker's group leaves it alive to see its
    // stdin close and kill its commands. The worker's IPC channel keeps the worker alive;
    // the helper must not (it exits by itself when stdin closes).
    // Its argument names this process: a helper whose parent is not (or no longer) this one
    // starts nothing. The second, which it ignores, tells it from this process's other helpers
    // (commandLine).
    const serial = ++Spawner.started;
    const child = spawn(BINARY, [String(process.pid), String(serial)], { stdio: ['pipe', 'pipe', 'inherit'], detached: true, cwd });
    child.unref();
    // Without a descriptor for its pipes (EMFILE) Node gives the child none, and says so by 'error'.
    (child.stdout as unknown as { unref(): void } | null)?.unref();
    return new Spawner(child, helperCommandLine(process.pid, serial));
  }

  get pid(): number | null {
    return this.child.pid ?? null;
  }

  get dead(): boolean {
    return this.exited;
  }

  /** Why the helper could not be started at all (EMFILE, EAGAIN…), once its start failed. */
  get startError(): NodeJS.ErrnoException | null {
    return this.failedStart;
  }

  /** Called once the helper process is running. */
  onSpawn(listener: () => void): void {
    if (this.running) listener();
    else this.spawnListeners.push(listener);
  }

  /** Called once when the helper is gone (after its pending commands were told so). */
  onExit(listener: (code: number | null, signal: NodeJS.Signals | null) => void): void {
    this.exitListeners.push(listener);
  }

  /** Closes its stdin: it kills what still runs and exits. */
  close(): void {
    this.child.stdin?.end();
  }

  private constructor(
    private readonly child: ChildProcessByStdio<Writable, Readable, null>,
    /**
     * How /proc shows this helper's command line (latin1): also that of a command it was
     * starting as it died, which has not reached its own program yet (see killLeftovers).
     */
    readonly commandLine: string,
  ) {
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (text: string) => this.read(text));
    child.stdin?.on('error', () => {}); // a dead helper: handled by 'close'
    child.once('spawn', () => {
      this.running = true;
      this.spawnListeners.forEach((l) => l());
    });
    child.on('error', (err) => {
      if (!this.running) this.failedStart = err;
      this.died(null, null);
    });
    // 'close', not 'exit': replies still in the pipe when it exits are read first.
    child.on('close', (code, signal) => this.died(code, signal));
  }

  /**
   * Queues argv (argv[0] looked up on PATH; `fallback`, if any, run with /bin/sh -c instead
   * when argv[0] cannot be executed): it starts in its own session once every command queued
   * before it has ended, output into logFile ('' discards it; so does a log that cannot be
   * created, told in its end), with `vars` over this process's environment. Its start is told
   * to `launch` as the helper's reply is read.
   */
  run(argv: string[], fallback: string | null, vars: Record<string, string>, logFile: string, launch: Pick<Launch, 'started'>): Promise<SpawnerEnd> {
    if (this.exited) return Promise.resolve({ kind: 'spawner-died', signal: this.signal });
    const id = this.nextId++;
    const env = Object.entries(vars).map(([k, v]) => `${k}=${v}`);
    const fields = ['R', String(id), logFile, String(argv.length), ...argv, String(env.length), ...env, fallback ?? ''];
    // Fields are NUL-separated: one holding a NUL would forge fields of its own. (runExec
    // refuses such commands first; this keeps the helper's input well-formed regardless.)
    if (fields.some((f) => f.includes('\0'))) return Promise.resolve({ kind: 'spawn-failed', errno: constants.errno.EINVAL });
    return new Promise<SpawnerEnd>((resolve) => {
      this.pending.set(id, { launch, logErrno: null, resolve });
      this.send(fields.join('\0') + '\0');
    });
  }

  /** Takes back the queued commands that have not started: each ends `dropped`. */
  dropQueued(): void {
    if (!this.exited) this.send('D\0');
  }

  /** Requests made in one turn of the event loop go to the helper in one write (a write wakes it). */
  private send(request: string): void {
    if (this.outbox === '') queueMicrotask(() => this.flushOutbox());
    this.outbox += request;
  }

  private flushOutbox(): void {
    const text = this.outbox;
    this.outbox = '';
    if (!this.exited) this.child.stdin?.write(text);
  }

  private read(text: string): void {
    this.buffered += text;
    let nl: number;
    while ((nl = this.buffered.indexOf('\n')) >= 0) {
      const [id, what, a, b, c, d, e] = this.buffered.slice(0, nl).split(' ');
      this.buffered = this.buffered.slice(nl + 1);
      const p = this.pending.get(Number(id));
      if (!p) continue;
      if (what === 'S' || what === 'L') {
        if (what === 'S') p.launch.started(Number(a), wallClock(Number(b)));
        else p.logErrno = Number(a);
        continue;
      }
      this.pending.delete(Number(id));
      if (what === 'D') p.resolve({ kind: 'dropped' });
      else if (what === 'X') p.resolve({ kind: 'exited', status: Number(a), written: Number(b), endedAt: wallClock(Number(c)), lingers: d === '1', wroteStderr: e === '0' ? false : e === '1' ? true : null, logErrno: p.logErrno });
      else p.resolve({ kind: 'spawn-failed', errno: Number(a) });
    }
  }

  private died(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exited) return;
    this.exited = true;
    this.signal = signal;
    for (const p of this.pending.values()) p.resolve({ kind: 'spawner-died', signal });
    this.pending.clear();
    for (const listener of this.exitListeners) listener(code, signal);
  }
}

/**
 * How /proc/PID/cmdline begins (read as latin1) for the helper a process `workerPid` started,
 * and for a command that helper is starting (between its spawn and its exec the command
 * shares the helper's memory, and reads as it); with `serial`, that one helper of the worker's.
 */
export function helperCommandLine(workerPid: number, serial?: number): string {
  return Buffer.from([BINARY, String(workerPid), ...(serial === undefined ? [] : [String(serial)]), ''].join('\0'), 'utf8').toString('latin1');
}

/**
 * A time the helper read on the monotonic clock (ms), as this process's Date.now() would have
 * said then: its age on the monotonic clock (which process.hrtime reads) taken from now.
 */
function wallClock(monotonicMs: number): number {
  const age = Number(process.hrtime.bigint() / 1_000_000n) - monotonicMs;
  return Date.now() - Math.max(0, age);
}

/**
 * Whether `binary` runs here and speaks this version's protocol: what the build or the install
 * found when it ran `--check` (its stamp, `<binary>.checked`, still describing this very file),
 * else what `--check` says now.
 */
export function speaksProtocol(binary: string): boolean {
  if (stampSays(binary)) return true;
  const r = spawnSync(binary, ['--check'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return r.status === 0 && r.stdout.trim() === SPAWNER_PROTOCOL;
}

/** Whether the stamp scripts/build-spawner.mjs wrote names this protocol and the file now at `binary` (size, time, inode). */
function stampSays(binary: string): boolean {
  try {
    const stamp = JSON.parse(readFileSync(`${binary}.checked`, 'utf8')) as Record<string, unknown>;
    const st = statSync(binary);
    return stamp.protocol === SPAWNER_PROTOCOL && stamp.size === st.size && stamp.mtimeMs === st.mtimeMs && stamp.ino === st.ino && stamp.dev === st.dev;
  } catch {
    return false;
  }
}
