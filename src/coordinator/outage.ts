import { setTimeout as sleep } from 'node:timers/promises';
import { StoreError } from '../errors.js';
import { formatMs } from '../job/units.js';
import type { Settlement } from '../store/task-store.js';
import type { RunStore } from './run-types.js';
import { backoffDelay, type BackoffPolicy } from './backoff.js';
import { lostClaimSettlement } from './settlement.js';
import { monotonicMs } from '../wall-steps.js';
import { TEST_HOOKS } from '../test-hooks.js';

/**
 * How long a run waits out a store that is unreachable (a PostgreSQL restart or failover, a
 * network cut) before it gives up with exit 4. Fixed, so every run and worker of a shared
 * store waits the same; SPLITDANCE_RECONNECT_MS overrides it (tests use a short one).
 */
const given = TEST_HOOKS.reconnectMs;
// A limit that does not parse must not become no limit at all (NaN never compares as reached).
const OUTAGE_LIMIT_MS = given && Number.isFinite(Number(given)) && Number(given) >= 0 ? Number(given) : 60_000;

/** Tries again after 100 ms, 200 ms, … up to 2 s apart, spread so many workers do not return at once. */
const RECONNECT: BackoffPolicy = { backoffMs: 100, factor: 2, maxBackoffMs: 2000, jitter: 0.2 };

/** A store error a run may wait out: the server is down or restarting, not a bug or a refusal. */
export function isUnavailable(err: unknown): boolean {
  return err instanceof StoreError && err.code === 'UNAVAILABLE';
}

/**
 * One run's view of a store outage: when it began, when to try again, and when to give up
 * (times on the monotonic clock: a wall-clock step neither ends nor stretches the wait).
 * While it lasts, attempts keep running and their outcomes wait in the coordinator's queue;
 * nothing is claimed. `note` says when it starts and ends (once each).
 */
export class Outage {
  private since: number | null = null;
  private tries = 0;
  private lastError = '';
  private retryAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;

  constructor(
    private readonly note: (message: string) => void,
    private readonly limitMs = OUTAGE_LIMIT_MS,
  ) {}

  get active(): boolean {
    return this.since !== null;
  }

  /** Whether the next try is still ahead: nothing should call the store before `retry` runs. */
  get waiting(): boolean {
    return monotonicMs() < this.retryAt;
  }

  /**
   * As `failed`, and runs `retry` once the wait is over. `giveUp` runs at the limit if the
   * outage has not ended by then: a retry still waiting on a silent network (a connection
   * attempt, up to 10 s) must not stretch the limit.
   */
  retryLater(err: unknown, retry: () => void, giveUp: (err: StoreError) => void): void {
    const delay = this.failed(err);
    this.retryAt = monotonicMs() + delay;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.retryAt = 0;
      retry();
    }, delay);
    this.deadline ??= setTimeout(() => giveUp(this.pastLimit(monotonicMs())), Math.max(0, this.since! + this.limitMs - monotonicMs()));
  }

  /** The run is over: no retry may run after it. */
  cancel(): void {
    clearTimeout(this.timer);
    clearTimeout(this.deadline);
    this.deadline = undefined;
    this.retryAt = 0;
  }

  /**
   * The store failed with `err`: returns how long to wait before trying again, or throws
   * (`err` itself when it is not an outage; a StoreError naming the outage past the limit).
   */
  failed(err: unknown, now = monotonicMs()): number {
    if (!isUnavailable(err)) throw err;
    this.lastError = (err as Error).message;
    if (this.since === null) {
      // A statement that went unanswered: the store was gone from when it was sent, not from when we gave up on it.
      this.since = now - (err as StoreError).silentMs;
      const cause = this.lastError.replace(/; (run again|check --db) .*$/, '');
      this.note(`the store is unavailable (${cause}); running attempts go on, reconnecting for up to ${formatMs(this.limitMs)}`);
    }
    if (now - this.since >= this.limitMs) throw this.pastLimit(now);
    this.tries++;
    return Math.min(backoffDelay(this.tries, RECONNECT), Math.max(0, this.since + this.limitMs - now));
  }

  /** A store call succeeded: the outage (if any) is over. Returns whether one was. */
  recovered(now = monotonicMs()): boolean {
    if (this.since === null) return false;
    this.note(`the store is back after ${formatMs(now - this.since)}; going on`);
    this.since = null;
    this.tries = 0;
    clearTimeout(this.deadline);
    this.deadline = undefined;
    return true;
  }

  private pastLimit(now: number): StoreError {
    return new StoreError(`the store stayed unavailable for ${formatMs(now - this.since!)} (limit ${formatMs(this.limitMs)}): ${this.lastError}`);
  }
}

/** Runs `read`, waiting out an outage of the store as a coordinator does; any other error is thrown. */
export async function ridingOut<T>(read: () => Promise<T>, note: (message: string) => void): Promise<T> {
  const outage = new Outage(note);
  for (;;) {
    try {
      const result = await read();
      outage.recovered();
      return result;
    } catch (err) {
      await sleep(outage.failed(err));
    }
  }
}

/**
 * A claim whose commit the server made but whose reply the outage lost leaves tasks RUNNING
 * under this owner that no worker runs; the heartbeat would renew them for ever. Gives each
 * back, uncharged (INTERRUPTED), and returns how many. `known`: the task ids this run holds
 * (in flight, or ended and not yet committed).
 */
export async function releaseLostClaims(store: RunStore, batchId: number, owner: string, known: Set<number>, now = Date.now()): Promise<number> {
  const orphans = (await store.listTasks({ batchId, status: 'RUNNING' })).filter((t) => t.leaseOwner === owner && !known.has(t.id));
  const settlements: Settlement[] = [];
  for (const t of orphans) {
    const open = (await store.attemptsOf(t.id)).filter((a) => a.endedAt === null).at(-1);
    if (!open) continue;
    settlements.push(lostClaimSettlement(t.id, open.id, now));
  }
  return settlements.length ? (await store.settle(settlements)).length : 0;
}
