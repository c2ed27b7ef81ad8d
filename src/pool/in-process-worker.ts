import { EventEmitter } from 'node:events';
import type { FromWorker, ToWorker } from '../worker/protocol.js';
import { HelperLauncher } from '../worker/helper-launcher.js';
import type { Spawner } from '../worker/spawner.js';
import { WorkerCore } from '../worker/worker-core.js';

/**
 * A worker for `--exec` batches that lives inside the coordinator and starts its commands
 * through its own spawner helper: no Node process to boot (~0.2 s a run here) and no IPC
 * hop per task. It looks like a forked worker to the pool — `message`, `exit`, `send`,
 * `disconnect`, a pid (the helper's) — and the helper is its body: if the helper dies, the
 * worker has died, with the same consequences (CRASHED attempt, replacement). Messages to
 * the pool are delivered asynchronously and in order, as over a channel.
 */
export class InProcessWorker extends EventEmitter {
  readonly stderr = null;
  connected = true;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  private readonly core: WorkerCore;
  private readonly launcher: HelperLauncher;

  constructor(private readonly spawner: Spawner) {
    super();
    this.launcher = new HelperLauncher(spawner);
    this.core = new WorkerCore({
      send: (msg, written) => {
        const deliver = () => this.connected && this.emit('message', msg as FromWorker);
        // Ready only once the helper runs: one that cannot start counts as a failed load.
        if (msg.type === 'ready') this.spawner.onSpawn(() => queueMicrotask(deliver));
        else queueMicrotask(deliver);
        written?.();
      },
      launcher: () => this.launcher,
      peakRss: () => 0, // the helper is tiny; --max-worker-memory is for handler workers
    });
    spawner.onExit((code, signal) => {
      this.connected = false;
      // A helper that never started is a worker that could not be started, as a failed fork
      // is: an 'error' and no 'exit'.
      const failed = spawner.startError;
      if (failed) return setImmediate(() => this.emit('error', failed));
      // The worker has died: nothing it had queued may start (the pool hands those on).
      this.core.killRunning();
      this.exitCode = code;
      this.signalCode = signal;
      setImmediate(() => this.emit('exit', code, signal));
    });
  }

  get pid(): number | undefined {
    return this.spawner.pid ?? undefined;
  }

  /** How /proc shows its helper's command line, and that of a command the helper was starting (spawner.ts). */
  get helperCommandLine(): string {
    return this.spawner.commandLine;
  }

  send(msg: ToWorker): boolean {
    if (!this.connected) return false;
    this.core.handle(msg);
    return true;
  }

  /** As a forked worker does when its channel closes: kill what runs, then exit (the helper closes). */
  disconnect(): void {
    if (!this.connected) return;
    this.connected = false;
    this.core.killRunning();
    this.spawner.close();
  }
}
