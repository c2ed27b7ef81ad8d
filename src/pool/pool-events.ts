/** What the coordinator sees of the pool's workers, and the events the pool reports to it. */
import type { DoneMessage } from '../worker/protocol.js';

/** A worker as the coordinator sees it: what it holds, and whether it takes more. */
export interface PoolWorker {
  readonly id: string;
  readonly pid: number | null;
  /**
   * The attempts handed to this worker and not yet ended, in order: the first runs, the rest
   * wait (an exec attempt may start before the one ahead of it is reported: see `started`).
   */
  readonly queue: number[];
  tasksRun: number;
  ready: boolean;
  /** Set when the worker should exit once idle (recycling). */
  retiring: boolean;
}

/** What the pool reports of its workers, as it learns it (see WorkerPool.attach). */
export interface PoolEvents {
  done(worker: PoolWorker, msg: DoneMessage): void;
  /** Attempts queued on the worker were taken back, never started (`why`, unless a shutdown did it). */
  dropped(worker: PoolWorker, tokens: number[], why: string): void;
  /** The worker died (by `signal`, if one killed it): `running`, the attempts it had started; `queued`, those that never started. */
  exited(worker: PoolWorker, running: number[], why: string, queued: number[], signal: NodeJS.Signals | null): void;
  /** An attempt queued on the worker started (an exec attempt's command; a module attempt starts when the one before is done). */
  started(worker: PoolWorker, token: number): void;
  /** A worker became ready and idle. */
  idle(): void;
  heartbeat(token: number): void;
  /** An attempt's command ended well; its declared output's sync follows (protocol.ts `ran`). */
  ran(token: number): void;
  /** A replacement worker could not be started (`why`): the pool runs on with one fewer. */
  shrunk(why: string): void;
}
