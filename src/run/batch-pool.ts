import type { Invocation } from '../job/run-options.js';
import type { BatchProgress, Counts } from '../store/task-store.js';
import type { HandlerSpec } from '../worker/protocol.js';
import { WorkerPool, type PoolOptions } from '../pool/pool.js';
import { ownerId } from '../lease-owner.js';
import { markChildren } from '../worker/owner-processes.js';
import { unlessAborted } from './signals.js';

/** How long a stopped attempt gets between SIGTERM and SIGKILL, in the pool and the coordinator. */
export const KILL_GRACE_MS = 2000;

/** What of a run's invocation shapes its pool. */
export type PoolLimits = Pick<Invocation, 'concurrency' | 'maxTasksPerWorker' | 'maxWorkerMemory' | 'loadTimeoutMs'> & Partial<Pick<Invocation, 'print' | 'results'>>;

/** `cwd`: the command's working directory, where its workers and their commands run (its Io's, which a test's differs from the process's). */
export function poolOptionsOf(limits: PoolLimits, handlers: Record<string, HandlerSpec>, cwd: string): PoolOptions {
  return {
    size: limits.concurrency,
    handlers: limits.print?.lineBuffer ? oneItemPerCall(handlers) : handlers,
    killGraceMs: KILL_GRACE_MS,
    maxTasksPerWorker: limits.maxTasksPerWorker,
    maxWorkerMemory: limits.maxWorkerMemory,
    loadTimeoutMs: limits.loadTimeoutMs,
    idPrefix: `${process.pid}.`,
    // The spawner helper gives a command one file for stdout and stderr; --print and --results
    // need them apart, which Node's own spawn (pipes) gives.
    nodeSpawn: Boolean(limits.print || limits.results),
    cwd,
  };
}

/**
 * `--line-buffer` prints each attempt's lines as they come, and a group's command is many
 * attempts' (and runs again, split, when it fails): a module's `batch` export then gets one task
 * per call. An `--exec` group is refused with it before anything is written (group-options.ts).
 */
function oneItemPerCall(handlers: Record<string, HandlerSpec>): Record<string, HandlerSpec> {
  return Object.fromEntries(Object.entries(handlers).map(([stage, h]) => [stage, h.kind === 'module' ? { ...h, maxItems: 1 } : h]));
}

/**
 * A pool with one worker that has loaded the handlers: a handler that does not load (or not
 * within --load-timeout) throws here (a UsageError, the pool already shut down), before the
 * caller writes anything. The command's signal aborting while it loads shuts it down and
 * gives null, so SIGINT/SIGTERM end a start-up stuck in an import. The run grows it once it
 * knows how much work there is (growToWork).
 */
export async function startPool(limits: PoolLimits, handlers: Record<string, HandlerSpec>, cwd: string): Promise<WorkerPool>;
export async function startPool(limits: PoolLimits, handlers: Record<string, HandlerSpec>, cwd: string, signal: AbortSignal): Promise<WorkerPool | null>;
export async function startPool(limits: PoolLimits, handlers: Record<string, HandlerSpec>, cwd: string, signal?: AbortSignal): Promise<WorkerPool | null> {
  // Every process the run starts carries its owner: a later run finds what it left if it dies with its helpers.
  markChildren(ownerId());
  const pool = new WorkerPool(poolOptionsOf(limits, handlers, cwd));
  const started = pool.start(1).then(() => true);
  if (!signal) {
    await started;
    return pool;
  }
  started.catch(() => undefined); // settled below, or left behind by the signal
  if (await unlessAborted(started, signal)) return pool;
  await pool.shutdown();
  return null;
}

/**
 * Grows the pool to the batch's work, no further (`-j 50` on one task starts one); returns the
 * counts it went by at once, and `grown`, which settles once every new worker has loaded or
 * failed to (what to tell the user when the machine would not give it that many: the run goes
 * on with what it has). The run does not wait for them: its first worker, loaded already, starts
 * on the work while the others load (about 0.2 s each), and each joins as it is ready.
 */
export async function growToWork(pool: WorkerPool, store: BatchProgress, batchId: number): Promise<{ counts: Counts; grown: Promise<string | null> }> {
  const c = await store.counts(batchId);
  return { counts: c, grown: pool.grow(c.pending + c.retrying + c.running + c.queued) };
}
