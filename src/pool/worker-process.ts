/** A worker's process: forked from child-main, or in-process with a spawner helper for `--exec` batches. */
import { fork } from 'node:child_process';
import type { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import { existsSync } from 'node:fs';
import { inPackage } from '../package-root.js';
import type { ToWorker } from '../worker/protocol.js';
import { Spawner } from '../worker/spawner.js';
import { InProcessWorker } from './in-process-worker.js';

/**
 * A worker process's entry: the bundled one (scripts/bundle.mjs) starts in about half the time
 * of the compiled modules it is made from, which are used when there is no bundle.
 */
let childMain: string | undefined;
const workerEntry = () => (childMain ??= [inPackage('dist/bundle/worker/child-main.mjs'), inPackage('dist/worker/child-main.js')].find((f) => existsSync(f))!);

/** A forked worker process, or an InProcessWorker that looks like one. */
export interface WorkerProcess extends EventEmitter {
  readonly pid?: number | undefined;
  readonly connected: boolean;
  readonly exitCode: number | null;
  readonly signalCode: NodeJS.Signals | null;
  readonly stderr: Readable | null;
  send(msg: ToWorker): boolean;
  disconnect(): void;
}

/**
 * Starts a worker's process: `--exec` batches (`execOnly`) run inside the coordinator through
 * spawner helpers when they are built; module handlers (and exec without the helper) in forked
 * worker processes, each leading its own process group (`detached`). `nodeSpawn`: no helper
 * here, and the forked worker is told by its environment to use none either (spawner.ts reads
 * SPLITDANCE_SPAWNER, which a user may also set). Both run in `cwd`, the command's working
 * directory, and so do the commands they start. Throws the errno of a refusal reported at
 * once (ENOMEM); others come as an 'error' event with no 'exit'.
 */
export function startWorkerProcess(execOnly: boolean, nodeSpawn: boolean, cwd: string): WorkerProcess {
  const spawner = execOnly && !nodeSpawn ? Spawner.start(cwd) : null;
  if (spawner) return new InProcessWorker(spawner);
  const env = nodeSpawn ? { ...process.env, SPLITDANCE_SPAWNER: 'node' } : process.env;
  return fork(workerEntry(), [], { detached: true, stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'json', env, cwd });
}
