/** What keeps a run's hold on its batch valid beside the claim: leases, dead owners, stuck workers, pause and definition changes. */
import type { Rate } from '../job/rate.js';
import { StoreError } from '../errors.js';
import type { BatchRecord, ClaimedTask, LeaseStore, LostAttempt, ReleasedTask } from '../store/task-store.js';
import type { StopReason, UpkeepPool } from './run-types.js';
import type { PoolWorker } from '../pool/pool.js';
import { recoverStale } from './recovery.js';
import { RenewalWatch } from './renewal-watch.js';
import { monotonicMs } from '../wall-steps.js';

/** What a look at the batch found. */
export interface BatchCheck {
  /** Attempts of dead owners that recovery recorded LOST. */
  released: ReleasedTask[];
  /** Paused, or given a newer definition: the run stops claiming. */
  stop: StopReason | null;
  /** The batch's --rate as stored now (`splitdance set --rate` changes it while runs go on). */
  rate: Rate | null;
  /** --rate-key as stored now: whether the rate applies per key. */
  rateKey: boolean;
  /** `splitdance set -j N` as stored now: at most N attempts running here; null: the run's -j. */
  limit: number | null;
  /** --adaptive as stored now. */
  adaptive: boolean;
}

const formatSeconds = (ms: number) => `${Math.round(ms / 100) / 10}s`;

/**
 * What keeps a run's hold on its batch valid, beside the claim loop: renewing the leases of
 * its attempts, taking back what dead owners left, giving back attempts queued behind a slow
 * one, and noticing that the batch was paused, pruned or given a newer definition. It acts on
 * the pool (stuck and stopped workers) and returns everything else for the coordinator to do.
 */
export class Upkeep {
  private lastRecovery: number | null = null;
  /**
   * Whether the last look saw another live coordinator on this machine holding tasks of the
   * batch, or an owner whose lease passed while its silence is not yet confirmed: either may
   * free tasks at any moment, so the run keeps looking every poll.
   */
  watchful = false;
  /** An expired lease under watch: a `--no-wait` run stays until it is decided. */
  watching = false;
  private readonly renewals: RenewalWatch;

  constructor(
    private readonly store: LeaseStore,
    private readonly batch: BatchRecord,
    private readonly owner: string,
    private readonly pool: UpkeepPool,
    private readonly timing: { pollMs: number; leaseMs: number },
    private readonly note: (message: string) => void,
    /** Told the attempts recovery records LOST, inside the release (their temporary files go). */
    private readonly beforeRelease: (lost: LostAttempt[]) => void,
  ) {
    this.renewals = new RenewalWatch(timing.leaseMs);
  }

  /** At most once a poll (null when not due): recovery, stuck and stopped workers, pause, a newer definition; a pruned batch throws. */
  async checkBatch(): Promise<BatchCheck | null> {
    const { store, batch, owner, pool } = this;
    const { pollMs, leaseMs } = this.timing;
    // The cadence on the monotonic clock (a wall-clock step back must not stop recovery); the
    // leases on the store's.
    const at = monotonicMs();
    if (this.lastRecovery !== null && at - this.lastRecovery < pollMs) return null;
    this.lastRecovery = at;
    const now = Date.now();
    // Pruned (or deleted) while this run was frozen: stop before claiming anything more. Ids
    // never repeat, so nothing it commits meanwhile can land on another batch's rows; a batch
    // of the same name made since is another batch.
    const current = await store.findBatch(batch.name);
    if (current?.id !== batch.id) {
      throw new StoreError(
        `batch "${batch.name}" is no longer in the store (pruned while this run was stopped?); this run stops without claiming or committing anything more`,
      );
    }
    const { released, liveHere, watching } = await recoverStale(store, batch.id, owner, this.renewals, now, this.beforeRelease);
    this.watchful = liveHere || watching;
    this.watching = watching;
    // Attempts queued behind one that turned out slow go back, so idle workers can run them.
    for (const w of pool.stuck(pollMs)) pool.drop(w);
    // A worker stopped past a lease is taken for dead: killed, its running attempt ends as a
    // crash and its queued ones go back unstarted, to run on the other workers.
    for (const w of pool.stopped(leaseMs, now)) {
      this.note(`worker ${w.id} (pid ${w.pid}) has been stopped (SIGSTOP) for over ${formatSeconds(leaseMs)} holding ${w.queue.length} attempt(s); it is killed so they can run elsewhere`);
      pool.kill(w);
    }
    // `splitdance pause` from anywhere: stop claiming within a poll, let running attempts finish.
    // Another run changed the definition: claims already stopped (the store refuses this version);
    // let running attempts finish, and the caller follows the new one.
    const stop: StopReason | null = current.paused ? { kind: 'paused' } : current.jobVersion !== batch.jobVersion ? { kind: 'definition-changed' } : null;
    return { released, stop, rate: (current.job.rate as Rate | null | undefined) ?? null, rateKey: typeof current.job.rateKey === 'string', limit: (current.job.concurrencyLimit as number | null | undefined) ?? null, adaptive: current.job.adaptive === true };
  }

  /** Whether the batch's stored definition is newer than the one this run's workers loaded. */
  async definitionChanged(): Promise<boolean> {
    const current = await this.store.findBatch(this.batch.name);
    return current?.id === this.batch.id && current.jobVersion !== this.batch.jobVersion;
  }

  /** Renews the leases of the attempts in flight; kills those whose task another owner took. */
  async heartbeat(inflight: ReadonlyMap<number, { task: ClaimedTask; worker: PoolWorker }>): Promise<void> {
    if (inflight.size === 0) return;
    const claimed = [...inflight.keys()]; // each committed before this heartbeat starts
    const held = new Set(await this.store.heartbeat(this.owner, Date.now() + this.timing.leaseMs));
    this.killTakenOver(
      inflight,
      claimed.filter((token) => !held.has(token)),
    );
  }

  /**
   * Attempts whose task another owner took while this process could not heartbeat (frozen
   * past its lease, seen from a remote host): their results would be fenced off, and the
   * task may already run elsewhere, so their commands are killed now rather than left to
   * run beside the new attempt. Each then settles as a crash, which the store fences off.
   */
  private killTakenOver(inflight: ReadonlyMap<number, { task: ClaimedTask; worker: PoolWorker }>, tokens: number[]): void {
    for (const token of tokens) {
      const entry = inflight.get(token);
      if (!entry) continue; // ended meanwhile: its settlement is fenced off as usual
      this.note(`attempt ${entry.task.attempt} of ${entry.task.key} lost its lease to another owner; its command is killed`);
      this.pool.kill(entry.worker);
    }
  }
}
