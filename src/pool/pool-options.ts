/** What a pool is started with: its size, the handlers, limits, and where and how its workers start. */
import type { HandlerSpec } from '../worker/protocol.js';

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
  /** Commands through Node's own spawn, never the spawner helper (--print and --results need stdout and stderr apart). */
  nodeSpawn?: boolean;
  /** The command's working directory: workers, helpers and the commands they start run there. */
  cwd: string;
}
