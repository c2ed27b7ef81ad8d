import { StoreError } from '../errors.js';
import type { BatchRecord, ClaimedTask, LeaseStore, PendingOutput, ReleasedTask } from '../store/task-store.js';
import type { RunObserver, StopReason } from './coordinator.js';
import type { PoolWorker, WorkerPool } from '../pool/pool.js';
import { recoverStale } from './recovery.js';
import { monotonicMs } from '../wall-steps.js';

export interface UpkeepHost {
  store: LeaseStore;
  batch: BatchRecord;
  owner: string;
  pool: WorkerPool;
  observer: RunObserver;
  pollMs: number;
  leaseMs: number;
  /** The run's attempts in flight, by token (the coordinator's own map). */
  inflight: ReadonlyMap<number, { task: ClaimedTask; worker: PoolWorker }>;
  stop(reason: StopReason): void;
  /** Attempts of dead owners that recovery recorded LOST. */
  lost(released: ReleasedTask[]): void;
  /** Committed successes whose output's rename was never confirmed (null: the batch declares no output). */
  unplaced: ((pending: PendingOutput[]) => void) | null;
}

const formatSeconds = (ms: number) => `${Math.round(ms / 100) / 10}s`;

/**
 * What keeps a run's hold on its batch valid, beside the claim loop: renewing the leases of
 * its attempts, taking back what dead owners left, giving back attempts queued behind a slow
 * one, and noticing that the batch was paused, pruned or given a newer definition.
 */
export class Upkeep {
  private lastRecovery: number | null = null;

  constructor(private readonly host: UpkeepHost) {}

  /** At most once a poll: recovery, stuck queues, pause, a newer definition; a pruned batch throws. */
  async recoverIfDue(): Promise<void> {
    const { store, batch, owner, pool, observer, pollMs } = this.host;
    // The cadence on the monotonic clock (a wall-clock step back must not stop recovery); the
    // leases on the store's.
    const at = monotonicMs();
    if (this.lastRecovery !== null && at - this.lastRecovery < pollMs) return;
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
    const released = await recoverStale(store, batch.id, owner, now);
    if (released.length) {
      this.host.lost(released);
      observer.released(released);
    }
    // A crash (here or on another host) between a success's commit and its output's rename.
    if (this.host.unplaced) this.host.unplaced(await store.pendingOutputs(batch.id));
    // Attempts queued behind one that turned out slow go back, so idle workers can run them.
    for (const w of pool.stuck(pollMs)) pool.drop(w);
    // A worker stopped past a lease is taken for dead: killed, its running attempt ends as a
    // crash and its queued ones go back unstarted, to run on the other workers.
    for (const w of pool.stopped(this.host.leaseMs, now)) {
      observer.note(`worker ${w.id} (pid ${w.pid}) has been stopped (SIGSTOP) for over ${formatSeconds(this.host.leaseMs)} holding ${w.queue.length} attempt(s); it is killed so they can run elsewhere`);
      pool.kill(w);
    }
    // `splitdance pause` from anywhere: stop claiming within a poll, let running attempts finish.
    if (current.paused) this.host.stop({ kind: 'paused' });
    // Another run changed the definition: claims already stopped (the store refuses this version);
    // let running attempts finish, and the caller follows the new one.
    else if (current.jobVersion !== batch.jobVersion) this.host.stop({ kind: 'definition-changed' });
  }

  /** Whether the batch's stored definition is newer than the one this run's workers loaded. */
  async definitionChanged(): Promise<boolean> {
    const { store, batch } = this.host;
    const current = await store.findBatch(batch.name);
    return current?.id === batch.id && current.jobVersion !== batch.jobVersion;
  }

  /** Renews the leases of the attempts in flight; kills those whose task another owner took. */
  async heartbeat(): Promise<void> {
    const { store, owner, leaseMs, inflight } = this.host;
    if (inflight.size === 0) return;
    const claimed = [...inflight.keys()]; // each committed before this heartbeat starts
    const held = new Set(await store.heartbeat(owner, Date.now() + leaseMs));
    this.killTakenOver(claimed.filter((token) => !held.has(token)));
  }

  /**
   * Attempts whose task another owner took while this process could not heartbeat (frozen
   * past its lease, seen from a remote host): their results would be fenced off, and the
   * task may already run elsewhere, so their commands are killed now rather than left to
   * run beside the new attempt. Each then settles as a crash, which the store fences off.
   */
  private killTakenOver(tokens: number[]): void {
    for (const token of tokens) {
      const entry = this.host.inflight.get(token);
      if (!entry) continue; // ended meanwhile: its settlement is fenced off as usual
      this.host.observer.note(`attempt ${entry.task.attempt} of ${entry.task.key} lost its lease to another owner; its command is killed`);
      this.host.pool.kill(entry.worker);
    }
  }
}
