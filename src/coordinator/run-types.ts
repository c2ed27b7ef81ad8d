/** What a run shares with its coordinator: how it stopped, who watches it, and what it needs of the store and the pool. */
import type { Rate } from '../job/rate.js';
import type { WorkerPool } from '../pool/pool.js';
import type { DeclaredOutputs } from './declared-outputs.js';
import type { RetryRules } from './settlement.js';
import type { ClaimedTask, LeaseStore, QueryStore, ReleasedTask, Settlement, TaskStatus } from '../store/task-store.js';

export interface RunObserver {
  /** An attempt was handed to a worker (in claim order); not called for tasks settled without running. */
  attemptStarted?(task: ClaimedTask): void;
  /**
   * `status`: the task's status once the attempt was committed (CANCELLED if `cancel` stopped
   * it). `printed`: for an item of a group (or of a group's half), the command whose output is
   * its own, and whether this item is the one that prints it (the others print nothing).
   */
  attemptEnded(task: ClaimedTask, settlement: Settlement, status: TaskStatus, printed?: PrintedAs): void;
  released(tasks: ReleasedTask[]): void;
  note(message: string): void;
}

/** The command an item's output came from, when it ran in a group (RunObserver.attemptEnded). */
export interface PrintedAs {
  /** The run's print id: its `--print`/`--results` copies are at `printPrefix(id)`. */
  id: string;
  /** Whether this item prints it: one item of the group does, its first. */
  lead: boolean;
  /** The keys of the command's items, in order (`--tag` names them all, as GNU parallel does). */
  keys: string[];
}

/** The signals that stop a run with a drain (SIGHUP: a closed terminal, a dropped ssh session). */
export type ShutdownSignal = 'SIGINT' | 'SIGTERM' | 'SIGHUP';

export type StopReason =
  | { kind: 'done' }
  | { kind: 'signal'; signal: ShutdownSignal }
  | { kind: 'max-failures' }
  | { kind: 'max-runtime' }
  | { kind: 'no-wait' }
  | { kind: 'paused' }
  /** Nothing left that can run: what is unfinished waits on declared outputs whose rename keeps failing. */
  | { kind: 'outputs-pending' }
  /** Another run stored a newer job definition (updateJob): running attempts finished; follow it. */
  | { kind: 'definition-changed' };

/** What a run's coordinator needs of its store: the lease verbs, and the two reads that find claims an outage lost. */
export type RunStore = LeaseStore & Pick<QueryStore, 'listTasks' | 'attemptsOf'>;

/**
 * What the tick needs of its pool of workers (pool/pool.ts): its events, the places to fill,
 * whether it wants work, and its end. What attempts in flight and upkeep need apart.
 */
export type TickPool = Pick<WorkerPool, 'attach' | 'freePlaces' | 'groups' | 'needsWork' | 'hasIdleWorker' | 'busyWorkers' | 'whyEmpty' | 'quiesce' | 'dropQueued' | 'shutdown' | 'widen' | 'grow'>;

/** What the attempts in flight need of the pool: hand them to a worker, stop them, kill their worker. */
export type AttemptPool = Pick<WorkerPool, 'reportsStarts' | 'groups' | 'dispatch' | 'abort' | 'interrupt' | 'kill'>;

/** What upkeep needs of the pool: workers stuck behind a slow attempt or stopped, to take back from or kill. */
export type UpkeepPool = Pick<WorkerPool, 'stuck' | 'stopped' | 'drop' | 'kill'>;

/** The whole pool a coordinator runs on. */
export type RunPool = TickPool & AttemptPool & UpkeepPool;

/** How a coordinator runs its batch: the retry rules, leases, limits and where things go. */
export interface CoordinatorOptions {
  /** The retry rules of a stage ('' for a batch without stages). */
  rules: (stage: string) => RetryRules;
  leaseMs: number;
  graceMs: number;
  killGraceMs: number;
  noWait: boolean;
  maxFailures: number | null;
  maxRuntimeMs: number | null;
  /** The logs root of the store's location (`logRoot`); the batch's folder is derived under it (log-layout.ts). */
  logDir: string;
  /** How often an otherwise idle coordinator looks for due retries and dead owners. */
  pollMs: number;
  /** Declared outputs: paths, up-to-date checks, what dead attempts left (declared-outputs.ts). */
  outputs: DeclaredOutputs;
  /** --rate: at most so many attempt starts per period for the batch, on every host (rate.ts); null: none. */
  rate: Rate | null;
  /** --rate-key: the rate applies per task's rate key (the store's key gates), not to the batch. */
  rateKey?: boolean;
  /** `splitdance set -j N`: at most N attempts running on this pool; null: all its workers. */
  limit: number | null;
  /** --adaptive (flow-limits.ts), and the run's -j it grows to at most; absent: off. */
  adaptive?: boolean;
  slots?: number;
  /** `--print`: where an attempt's copies of its stdout and stderr go (attempt-printer.ts), or null; `id` names the command's run (printId). */
  printPrefix: ((id: string) => string) | null;
}
