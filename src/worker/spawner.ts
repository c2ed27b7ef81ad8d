import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

/** Built from src/worker/spawner.c by `npm run build` when a C compiler is present. */
const BINARY = fileURLToPath(new URL('../native/spawner', import.meta.url));

export type SpawnerEnd =
  /** The command ran: its raw wait status and the bytes it wrote to its log. */
  | { kind: 'exited'; status: number; written: number }
  /** It could not start (errno), e.g. no such command; nothing ran. */
  | { kind: 'spawn-failed'; errno: number }
  /** Its log file could not be opened (errno); nothing ran. */
  | { kind: 'log-failed'; errno: number }
  /** The spawner itself died; whether the command ran is unknown. */
  | { kind: 'spawner-died' };

interface Pending {
  onStarted(pid: number): void;
  resolve(end: SpawnerEnd): void;
}

/**
 * The worker's side of spawner.c: one long-lived helper that starts commands with
 * posix_spawn instead of forking this Node process for each (see spawner.c for why and
 * for the protocol). `Spawner.get()` is null when the helper is not built or
 * SPLITDANCE_SPAWNER=node asks for Node's own spawn; a helper that dies is not restarted.
 */
export class Spawner {
  private static instance: Spawner | null | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private buffered = '';
  private dead = false;

  static get(): Spawner | null {
    if (Spawner.instance === undefined) Spawner.instance = Spawner.start();
    if (Spawner.instance?.dead) Spawner.instance = null;
    return Spawner.instance;
  }

  private static start(): Spawner | null {
    if (process.env.SPLITDANCE_SPAWNER === 'node') return null;
    try {
      accessSync(BINARY, constants.X_OK);
    } catch {
      return null;
    }
    const child = spawn(BINARY, [], { stdio: ['pipe', 'pipe', 'inherit'] });
    // The worker's IPC channel keeps it alive; the helper must not (it exits when stdin closes).
    child.unref();
    (child.stdout as unknown as { unref(): void }).unref();
    return new Spawner(child);
  }

  private constructor(private readonly child: ChildProcessByStdio<Writable, Readable, null>) {
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text: string) => this.read(text));
    child.stdin.on('error', () => {}); // a dead helper: handled by 'exit'
    child.on('error', () => this.died());
    child.on('exit', () => this.died());
  }

  /**
   * Starts argv (argv[0] looked up on PATH) in its own session, output appended to
   * logFile, with `vars` over this process's environment.
   */
  run(argv: string[], vars: Record<string, string>, logFile: string, onStarted: (pid: number) => void): Promise<SpawnerEnd> {
    if (this.dead) return Promise.resolve({ kind: 'spawner-died' });
    const id = this.nextId++;
    const env = Object.entries(vars).map(([k, v]) => `${k}=${v}`);
    const fields = [String(id), logFile, String(argv.length), ...argv, String(env.length), ...env];
    return new Promise<SpawnerEnd>((resolve) => {
      this.pending.set(id, { onStarted, resolve });
      this.child.stdin.write(fields.join('\0') + '\0');
    });
  }

  private read(text: string): void {
    this.buffered += text;
    let nl: number;
    while ((nl = this.buffered.indexOf('\n')) >= 0) {
      const [id, what, a, b] = this.buffered.slice(0, nl).split(' ');
      this.buffered = this.buffered.slice(nl + 1);
      const p = this.pending.get(Number(id));
      if (!p) continue;
      if (what === 'S') {
        p.onStarted(Number(a));
        continue;
      }
      this.pending.delete(Number(id));
      if (what === 'X') p.resolve({ kind: 'exited', status: Number(a), written: Number(b) });
      else p.resolve({ kind: what === 'L' ? 'log-failed' : 'spawn-failed', errno: Number(a) });
    }
  }

  private died(): void {
    if (this.dead) return;
    this.dead = true;
    for (const p of this.pending.values()) p.resolve({ kind: 'spawner-died' });
    this.pending.clear();
  }
}
