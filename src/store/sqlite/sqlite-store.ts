import { grant } from '../shared/rate-gate.js';
import type * as T from '../records.js';
import type * as H from '../hook-records.js';
import * as hooks from './sqlite-hooks.js';
import type { RetryDue, TaskStore } from '../task-store.js';
import { StoreError } from '../../errors.js';
import { openSqlite, storeError, type SqliteOpenOptions } from './open-sqlite.js';
import type { TrustedOwners } from './store-owner.js';
import { SqliteConn } from './sqlite-conn.js';
import { enqueue } from './sqlite-enqueue.js';
import { claim, heartbeat, releaseStale, settle } from './sqlite-lease.js';
import * as list from './sqlite-list.js';
import * as admin from './sqlite-admin.js';
import { pendingOutputOf, type PendingOutputRow } from '../shared/pending-outputs.js';

/**
 * The SQLite TaskStore: a thin facade over the per-verb modules (sqlite-lease, sqlite-enqueue,
 * sqlite-list, sqlite-admin, sqlite-stages), as postgres/ is. better-sqlite3 is synchronous;
 * the async interface exists for the PostgreSQL backend.
 */
export class SqliteStore implements TaskStore {
  readonly identity: string;

  private constructor(
    private readonly c: SqliteConn,
    /** Checked again by enqueue's own connection. */
    private readonly trust: TrustedOwners,
  ) {
    this.identity = c.identity;
  }

  get location(): string {
    return this.c.location;
  }

  static open(path: string, options: SqliteOpenOptions): SqliteStore {
    const db = openSqlite(path, options);
    try {
      return new SqliteStore(new SqliteConn(path, db, options.readonly ?? options.inspect ?? false), options.trust ?? []);
    } catch (err) {
      db.close();
      throw storeError(err, path);
    }
  }

  async enqueue(batch: T.NewBatch, specs: Iterable<T.TaskSpec>, options: T.EnqueueOptions = {}): Promise<T.EnqueueResult> {
    if (this.c.readonly) throw new StoreError(`the store ${this.location} is open read-only; nothing can be enqueued`);
    return enqueue(this.location, batch, specs, options, this.trust);
  }

  async takeStarts(batchId: number, want: number, now: number, spacingMs: number, burst: number): Promise<{ granted: number; wakeAt: number }> {
    return this.c.write(() => {
      const row = this.c.st.rateGate.get(batchId) as { next_at: number } | undefined;
      const gate = grant(row?.next_at ?? null, want, now, spacingMs, burst);
      if (gate.granted > 0) this.c.st.moveRateGate.run({ batchId, next: gate.next });
      return { granted: gate.granted, wakeAt: gate.wakeAt };
    });
  }

  async takeHook(take: H.HookTake, judge: { dead(owner: string): boolean; liveHere(owner: string): boolean }): Promise<{ taken: boolean; record: H.HookRecord }> {
    return hooks.takeHook(this.c, take, judge);
  }

  async renewHook(batchId: number, hook: H.HookKind, endMark: string, owner: string, leaseExpiresAt: number): Promise<boolean> {
    return hooks.renewHook(this.c, batchId, hook, endMark, owner, leaseExpiresAt);
  }

  async endHook(batchId: number, hook: H.HookKind, endMark: string, owner: string, end: H.HookEnd): Promise<boolean> {
    return hooks.endHook(this.c, batchId, hook, endMark, owner, end);
  }

  async hooksOf(batchId: number): Promise<H.HookRecord[]> {
    return hooks.hooksOf(this.c, batchId);
  }

  async keyGateOpensAt(batchId: number, now: number): Promise<number | null> {
    return this.c.read(() => (this.c.st.nextKeyGate.get({ batchId, now }) as { at: number | null }).at);
  }

  async publishLevel(batchId: number, owner: string, level: { level: number; max: number; pace: number | null } | null, now: number): Promise<void> {
    this.c.write(() => (level ? this.c.st.publishLevel.run({ batchId, owner, level: level.level, max: level.max, pace: level.pace, now }) : this.c.st.dropLevel.run({ batchId, owner })));
  }

  async claim(req: T.ClaimRequest): Promise<T.ClaimedTask[]> {
    if (req.slots.length === 0 && !req.started?.length) return [];
    return this.c.write(() => claim(this.c.st, req));
  }

  /**
   * One transaction for a coordinator's tick: commit the finished attempts, then claim for
   * the free slots. Halves the commits per task compared with settle + claim.
   */
  async settleAndClaim(settlements: T.Settlement[], req: T.ClaimRequest, placed: { taskId: number; temp: string }[] = []): Promise<{ applied: T.Applied[]; claimed: T.ClaimedTask[] }> {
    if (settlements.length === 0 && req.slots.length === 0 && !req.started?.length && placed.length === 0) return { applied: [], claimed: [] };
    return this.c.write(() => {
      if (placed.length) this.c.st.outputsPlaced.run({ list: placedList(placed) });
      return { applied: settle(this.c.st, settlements), claimed: claim(this.c.st, req) };
    });
  }

  async settle(settlements: T.Settlement[]): Promise<T.Applied[]> {
    if (settlements.length === 0) return [];
    return this.c.write(() => settle(this.c.st, settlements));
  }

  async heartbeat(owner: string, leaseExpiresAt: number): Promise<number[]> {
    return heartbeat(this.c, owner, leaseExpiresAt);
  }

  async shiftRetries(retries: RetryDue[], stepMs: number): Promise<RetryDue[]> {
    if (retries.length === 0 || stepMs === 0) return [];
    return this.c.write(() =>
      retries.filter((r) => this.c.st.shiftRetry.run({ id: r.taskId, due: r.dueAt, step: stepMs }).changes === 1).map((r) => ({ taskId: r.taskId, dueAt: r.dueAt + stepMs })),
    );
  }

  async releaseStale(batchId: number | null, now: number, deadOwners: string[], self: string, liveOwners: string[] = [], beforeRelease?: (lost: T.LostAttempt[]) => void): Promise<T.ReleasedTask[]> {
    return releaseStale(this.c, batchId, now, deadOwners, self, liveOwners, beforeRelease);
  }

  async pendingOutputs(batchId: number | null): Promise<T.PendingOutput[]> {
    const rows = this.c.read(() => (batchId === null ? this.c.st.allPendingOutputs.all() : this.c.st.pendingOutputs.all(batchId)) as PendingOutputRow[]);
    return rows.map(pendingOutputOf);
  }

  async outputsPlaced(placed: { taskId: number; temp: string }[]): Promise<void> {
    if (placed.length === 0) return;
    this.c.write(() => this.c.st.outputsPlaced.run({ list: placedList(placed) }));
  }

  async statuses(taskIds: number[]): Promise<Map<number, T.TaskStatus>> {
    return list.statuses(this.c, taskIds);
  }

  async runningOwners(batchId: number | null, now: number): Promise<T.RunningOwner[]> {
    return list.runningOwners(this.c, batchId, now);
  }

  async findBatch(name: string): Promise<T.BatchRecord | undefined> {
    return list.findBatch(this.c, name);
  }

  async latestBatch(): Promise<T.BatchRecord | undefined> {
    return list.latestBatch(this.c);
  }

  async listBatches(): Promise<T.BatchRecord[]> {
    return list.listBatches(this.c);
  }

  async upToDateCount(batchId: number): Promise<number> {
    return list.upToDateCount(this.c, batchId);
  }

  async changedCount(batchId: number): Promise<number> {
    return list.changedCount(this.c, batchId);
  }

  async lastSeq(batchId: number): Promise<number> {
    return list.lastSeq(this.c, batchId);
  }

  async counts(batchId: number): Promise<T.Counts> {
    return list.counts(this.c, batchId);
  }

  async progress(batchId: number): Promise<T.BatchMoves> {
    return list.progress(this.c, batchId);
  }

  async stageCounts(batchId: number): Promise<T.StageCounts[]> {
    return list.stageCounts(this.c, batchId);
  }

  async learnedWork(batchId: number): Promise<T.LearnedWork> {
    const r = this.c.read(() => this.c.st.learnedWork.get({ batchId }) as { open_known: number; open_ms: number; done_known: number; done_ms: number });
    return { openKnown: r.open_known, openMs: r.open_ms, doneKnown: r.done_known, doneMs: r.done_ms };
  }

  async adaptiveLevels(batchId: number, since: number): Promise<T.PublishedLevel[]> {
    const rows = this.c.read(() => this.c.st.adaptiveLevels.all({ batchId, since }) as { owner: string; level: number; max_level: number; pace: number | null; updated_at: number }[]);
    return rows.map((r) => ({ owner: r.owner, level: r.level, max: r.max_level, pace: r.pace, updatedAt: r.updated_at }));
  }

  async nextDueAt(batchId: number): Promise<number | null> {
    return list.nextDueAt(this.c, batchId);
  }

  async topErrors(batchId: number, limit: number): Promise<T.ErrorCount[]> {
    return list.topErrors(this.c, batchId, limit);
  }

  async listTasks(filter: T.TaskFilter): Promise<T.TaskRow[]> {
    return this.c.read(() => list.selectTasks(this.c, filter));
  }

  async eachTaskPage(filter: T.TaskFilter, onPage: (tasks: T.TaskRow[]) => Promise<void>): Promise<void> {
    return list.eachTaskPage(this.c, filter, onPage);
  }

  async eachOutcomePage(filter: Pick<T.TaskFilter, 'batchId' | 'status' | 'attemptedOnly'>, onPage: (rows: T.TaskOutcome[]) => Promise<void>): Promise<void> {
    return list.eachOutcomePage(this.c, filter, onPage);
  }

  async runningTasks(batchId: number, limit: number): Promise<T.TaskRow[]> {
    return list.runningTasks(this.c, batchId, limit);
  }

  async getTask(batchId: number, key: string): Promise<T.TaskRow | undefined> {
    return list.getTask(this.c, batchId, key);
  }

  async attemptsOf(taskId: number): Promise<T.AttemptRow[]> {
    return list.attemptsOf(this.c, taskId);
  }

  async recentAttempts(batchId: number, limit: number): Promise<T.BatchAttempt[]> {
    return list.recentAttempts(this.c, batchId, limit);
  }

  async batchAttempts(batchId: number, limit: number): Promise<{ attempts: T.BatchAttempt[]; total: number }> {
    return { attempts: list.recentAttempts(this.c, batchId, limit), total: list.batchAttemptCount(this.c, batchId) };
  }

  async attemptStats(batchId: number, boundsMs: readonly number[]): Promise<T.AttemptStats> {
    return list.attemptStats(this.c, batchId, boundsMs);
  }

  async lastRetryDueAt(batchId: number): Promise<number | null> {
    return list.lastRetryDueAt(this.c, batchId);
  }

  async activity(batchId: number): Promise<{ firstStartedAt: number | null; lastFinishedAt: number | null }> {
    return list.activity(this.c, batchId);
  }

  async historySize(): Promise<number> {
    return list.historySize(this.c);
  }

  async learnedDurations(source: string): Promise<Map<string, number>> {
    return list.learnedDurations(this.c, source);
  }

  async rerank(batchId: number, ranks: T.Rank[], patch?: Record<string, unknown>): Promise<number> {
    return admin.rerank(this.c, batchId, ranks, patch);
  }

  async setPaused(batchId: number, paused: boolean): Promise<void> {
    admin.setPaused(this.c, batchId, paused);
  }

  async updateJob(batchId: number, job: Record<string, unknown>, budget: T.Budget): Promise<number> {
    return admin.updateJob(this.c, batchId, job, budget);
  }

  async retryFailed(filter: T.TaskFilter): Promise<number> {
    return admin.retryFailed(this.c, filter);
  }

  async cancel(filter: Pick<T.TaskFilter, 'batchId' | 'keyMatches'>): Promise<T.CancelResult> {
    return admin.cancel(this.c, filter);
  }

  async pruneFinished(before: number, onChunk?: (batch: string, logPaths: string[]) => void, only?: number): Promise<T.PruneResult> {
    return admin.pruneFinished(this.c, before, onChunk, only);
  }

  async prunableBatches(before: number, only?: number): Promise<T.BatchRecord[]> {
    return list.prunableBatches(this.c, before, only);
  }

  async close(): Promise<void> {
    this.c.db.close();
  }
}

const placedList = (placed: { taskId: number; temp: string }[]) => JSON.stringify(placed.map((p) => [p.taskId, p.temp]));
