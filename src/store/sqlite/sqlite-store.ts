import type Database from 'better-sqlite3';
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  AttemptRow,
  BatchAttempt,
  BatchRecord,
  Budget,
  CancelResult,
  ClaimRequest,
  ClaimedTask,
  Counts,
  EnqueueResult,
  ErrorCount,
  NewBatch,
  PruneResult,
  ReleasedTask,
  Settlement,
  StageCounts,
  TaskFilter,
  TaskRow,
  TaskSpec,
  TaskStatus,
  TaskStore,
} from '../task-store.js';
import { StoreError } from '../../errors.js';
import { openSqlite, readIdentity, storeError } from './open-sqlite.js';
import { prepareStatements, type Statements } from './statements.js';
import { stageCountsOf, toAttemptRow, toBatch, toCounts, toTaskRow, type AttemptDbRow, type BatchDbRow, type CountDbRow, type TaskDbRow } from '../db-rows.js';
import { failpoint } from '../failpoint.js';
import { budgets } from '../budget.js';
import { PRUNE_CHUNK, pruneInChunks, type PruneStep } from '../prune-in-chunks.js';
import { enqueue } from './sqlite-enqueue.js';
import { claim, settle } from './sqlite-lease.js';
import { cascade, revive } from './sqlite-stages.js';

/** Task ids per statement of a whole-batch update (see updateJob). */
const ID_CHUNK = 10_000;

/**
 * The SQLite TaskStore. better-sqlite3 is synchronous; the async interface exists for
 * the PostgreSQL backend. Every write is one short `BEGIN IMMEDIATE` transaction, so a
 * writer waits for the lock up front (busy_timeout) instead of failing half-way.
 */
export class SqliteStore implements TaskStore {
  private readonly db: Database.Database;
  private readonly st: Statements;
  /** Made once: wrapping a function anew for every write cost ≈ 5 µs per tick. */
  private readonly transaction: Database.Transaction<(fn: () => unknown) => unknown>;

  readonly identity: string;

  private constructor(
    readonly location: string,
    db: Database.Database,
    private readonly readonly: boolean,
  ) {
    this.db = db;
    this.identity = readIdentity(db);
    this.st = prepareStatements(db);
    this.transaction = db.transaction((fn: () => unknown) => fn());
  }

  static open(path: string, options: { create: boolean; readonly?: boolean }): SqliteStore {
    const db = openSqlite(path, options);
    try {
      return new SqliteStore(path, db, options.readonly ?? false);
    } catch (err) {
      db.close();
      throw storeError(err, path);
    }
  }

  /**
   * Runs `fn` in a BEGIN IMMEDIATE transaction, mapping driver errors to StoreError.
   *
   * Its statement journals (each statement's undo log inside the transaction) stay in memory:
   * past 64 KB SQLite moves one to a file in the temporary folder, and with that folder full
   * the commit failed as "disk full". Every write statement changes a bounded set of rows (a
   * tick's group, a chunk), so the memory is bounded too. Outside writes the connection keeps
   * temporary files, so a read sorting a million rows never holds them in memory. (Switching
   * costs ≈ 2 µs: the connection never opens a temporary database, which would pin it.)
   */
  private write<T>(fn: () => T): T {
    try {
      this.tempStore('MEMORY');
      const result = this.transaction.immediate(fn) as T;
      failpoint('write');
      return result;
    } catch (err) {
      throw storeError(err, this.location);
    } finally {
      this.tempStore('FILE');
    }
  }

  /** Where this connection keeps temporary data now (see write). */
  private temp: 'FILE' | 'MEMORY' = 'FILE';

  private tempStore(where: 'FILE' | 'MEMORY'): void {
    if (this.temp === where) return;
    (where === 'MEMORY' ? this.st.tempInMemory : this.st.tempInFiles).run();
    this.temp = where;
  }

  private read<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw storeError(err, this.location);
    }
  }

  async findBatch(name: string): Promise<BatchRecord | undefined> {
    const row = this.read(() => this.st.batchByName.get(name) as BatchDbRow | undefined);
    return row && toBatch(row);
  }

  async latestBatch(): Promise<BatchRecord | undefined> {
    const row = this.read(() => this.st.latestBatch.get() as BatchDbRow | undefined);
    return row && toBatch(row);
  }

  async listBatches(): Promise<BatchRecord[]> {
    return this.read(() => (this.st.listBatches.all() as BatchDbRow[]).map(toBatch));
  }

  async enqueue(batch: NewBatch, specs: Iterable<TaskSpec>, options: { rerunChanged?: boolean } = {}): Promise<EnqueueResult> {
    if (this.readonly) throw new StoreError(`the store ${this.location} is open read-only; nothing can be enqueued`);
    return enqueue(this.location, batch, specs, options.rerunChanged ?? false);
  }

  async setPaused(batchId: number, paused: boolean): Promise<void> {
    this.write(() => this.st.setPaused.run({ batchId, paused: paused ? 1 : 0, now: Date.now() }));
  }

  async changedCount(batchId: number): Promise<number> {
    return this.read(() => (this.st.countChanged.get({ batchId }) as { n: number }).n);
  }

  async updateJob(batchId: number, job: Record<string, unknown>, budget: Budget): Promise<number> {
    return this.write(() => {
      const now = Date.now();
      const row = this.st.updateJob.get({ batchId, job: JSON.stringify(job), now }) as { job_version: number } | undefined;
      const { lo, hi } = this.st.taskIdRange.get(batchId) as { lo: number | null; hi: number | null };
      const items: (string | null)[] = [];
      // In ranges of ids: each statement's undo log is kept in memory, so none may span a million rows.
      for (let from = lo ?? 1; lo !== null && hi !== null && from <= hi; from += ID_CHUNK) {
        const range = { batchId, from, to: from + ID_CHUNK - 1 };
        for (const [stage, maxAttempts] of budgets(budget)) this.st.updateMaxAttempts.run({ ...range, maxAttempts, stage });
        for (const r of this.st.failExhausted.all({ ...range, now }) as { item_key: string | null }[]) items.push(r.item_key);
      }
      cascade(this.st, batchId, items, now);
      return row?.job_version ?? 0;
    });
  }

  async claim(req: ClaimRequest): Promise<ClaimedTask[]> {
    if (req.slots.length === 0) return [];
    return this.write(() => claim(this.st, req));
  }

  /**
   * One transaction for a coordinator's tick: commit the finished attempts, then claim for
   * the free slots. Halves the commits per task compared with settle + claim.
   */
  async settleAndClaim(settlements: Settlement[], req: ClaimRequest): Promise<{ applied: number[]; claimed: ClaimedTask[] }> {
    if (settlements.length === 0 && req.slots.length === 0) return { applied: [], claimed: [] };
    return this.write(() => ({ applied: settle(this.st, settlements), claimed: claim(this.st, req) }));
  }

  async heartbeat(owner: string, leaseExpiresAt: number): Promise<number[]> {
    return this.write(() => (this.st.heartbeat.all({ owner, expires: leaseExpiresAt }) as { token: number }[]).map((r) => r.token));
  }

  async settle(settlements: Settlement[]): Promise<number[]> {
    if (settlements.length === 0) return [];
    return this.write(() => settle(this.st, settlements));
  }

  async statuses(taskIds: number[]): Promise<Map<number, TaskStatus>> {
    if (taskIds.length === 0) return new Map();
    const rows = this.read(() => this.st.statuses.all(JSON.stringify(taskIds)) as { id: number; status: TaskStatus }[]);
    return new Map(rows.map((r) => [r.id, r.status]));
  }

  async runningOwners(batchId: number | null): Promise<string[]> {
    const rows = this.read(() => this.st.runningOwners.all({ batchId }) as { owner: string }[]);
    return rows.map((r) => r.owner);
  }

  async releaseStale(batchId: number | null, now: number, deadOwners: string[], self: string, liveOwners: string[] = []): Promise<ReleasedTask[]> {
    const params = { batchId, now, dead: JSON.stringify(deadOwners), self, live: JSON.stringify(liveOwners) };
    // Read first so the common case (nothing stale) takes no write lock.
    const stale = this.read(() => this.st.staleTasks.all(params) as TaskDbRow[]);
    if (stale.length === 0) return [];
    return this.write(() => {
      const released: ReleasedTask[] = [];
      const ended: TaskDbRow[] = [];
      for (const t of this.st.staleTasks.all(params) as TaskDbRow[]) {
        const dead = t.lease_owner !== null && deadOwners.includes(t.lease_owner);
        const error = dead
          ? `LOST: its coordinator (${t.lease_owner}) died while the attempt ran`
          : `LOST: the lease of ${t.lease_owner ?? 'an unknown owner'} expired without a heartbeat`;
        const after = this.st.releaseLost.get({ id: t.id, now, error }) as { status: TaskStatus };
        this.st.loseAttempt.run({ token: t.lease_token, error });
        released.push({ key: t.task_key, owner: t.lease_owner, failed: after.status !== 'PENDING' });
        if (after.status !== 'PENDING') ended.push(t);
      }
      for (const t of ended) cascade(this.st, t.batch_id, [t.item_key], now);
      return released;
    });
  }

  async counts(batchId: number): Promise<Counts> {
    const rows = this.read(() => this.st.counts.all({ batchId }) as CountDbRow[]);
    const c = toCounts(rows.filter((r) => !r.tried));
    for (const r of rows.filter((r) => r.tried)) {
      c.retrying += r.n; // also counted in the PENDING row above: move them over
      c.pending -= r.n;
    }
    return c;
  }

  async nextDueAt(batchId: number): Promise<number | null> {
    const row = this.read(() => this.st.nextDue.get(batchId) as { due: number | null });
    return row.due;
  }

  async topErrors(batchId: number, limit: number): Promise<ErrorCount[]> {
    return this.read(() => this.st.failedErrors.all({ batchId, limit }) as ErrorCount[]);
  }

  async listTasks(filter: TaskFilter): Promise<TaskRow[]> {
    return this.read(() => this.selectTasks(filter));
  }

  /** The matching tasks, in creation order. Sorting a batch may need temporary files, even inside a write. */
  private selectTasks(filter: TaskFilter): TaskRow[] {
    const was = this.temp;
    this.tempStore('FILE');
    try {
      return this.matching(filter);
    } finally {
      this.tempStore(was);
    }
  }

  private matching(filter: TaskFilter): TaskRow[] {
    const out: TaskRow[] = [];
    if (filter.limit !== undefined && filter.limit <= 0) return out;
    const statement = filter.order === 'slowest' ? this.st.slowestTasks : this.st.listTasks;
    const rows = statement.iterate({
      batchId: filter.batchId,
      status: filter.status ?? null,
      error: filter.errorContains ?? null,
      attempted: filter.attemptedOnly ? 1 : null,
    }) as IterableIterator<TaskDbRow>;
    for (const row of rows) {
      if (filter.keyMatches && !filter.keyMatches(row.task_key)) continue;
      if (filter.errorMatches && !filter.errorMatches(row.last_error)) continue;
      out.push(toTaskRow(row));
      if (filter.limit !== undefined && out.length >= filter.limit) {
        rows.return?.();
        break;
      }
    }
    return out;
  }

  async getTask(batchId: number, key: string): Promise<TaskRow | undefined> {
    const row = this.read(() => this.st.taskByKey.get(batchId, key, key.split('/')[0]) as TaskDbRow | undefined);
    return row && toTaskRow(row);
  }

  async attemptsOf(taskId: number): Promise<AttemptRow[]> {
    return this.read(() => (this.st.attemptsOf.all(taskId) as AttemptDbRow[]).map(toAttemptRow));
  }

  async recentAttempts(batchId: number, limit: number): Promise<BatchAttempt[]> {
    return this.read(() => {
      const rows = this.st.batchAttempts.all({ batchId, limit }) as (AttemptDbRow & { task_key: string })[];
      return rows.reverse().map((r) => ({ ...toAttemptRow(r), key: r.task_key }));
    });
  }

  async batchAttempts(batchId: number, limit: number): Promise<{ attempts: BatchAttempt[]; total: number }> {
    const attempts = await this.recentAttempts(batchId, limit);
    return { attempts, total: this.read(() => (this.st.batchAttemptCount.get(batchId) as { n: number }).n) };
  }

  async pruneFinished(before: number, onChunk?: (batch: string, logPaths: string[]) => void): Promise<PruneResult> {
    const batches = this.read(() => this.st.finishedBatches.all({ before }) as BatchDbRow[]);
    // A writer waiting for the lock polls (SQLite's busy handler sleeps between tries): without
    // a gap, the next chunk takes the lock again first and starves it into its busy timeout.
    // The gap is twice the chunk's time, so the lock is free two thirds of the time.
    const gap = (stepMs: number) => sleep(Math.max(5, 2 * stepMs));
    return pruneInChunks(batches, async (b) => this.write(() => this.pruneChunk(b.id, before)), onChunk, gap);
  }

  /** One short transaction of a prune: a chunk of attempts, else of tasks, else the batch row. */
  private pruneChunk(batchId: number, before: number): PruneStep {
    if (!this.st.stillPrunable.get({ batchId, before })) return 'live';
    this.st.raiseHighWater.run(); // the ids about to go stay taken (ids never repeat)
    const paths = this.st.pruneAttempts.all({ batchId, n: PRUNE_CHUNK }) as { path: string | null }[];
    if (paths.length > 0) return { attempts: paths.length, tasks: 0, logPaths: paths.flatMap((p) => (p.path === null ? [] : [p.path])) };
    const tasks = this.st.pruneTasks.run({ batchId, n: PRUNE_CHUNK }).changes;
    if (tasks > 0) return { attempts: 0, tasks, logPaths: [] };
    this.st.deleteBatch.run(batchId);
    return 'gone';
  }

  async historySize(): Promise<number> {
    return this.read(() => (this.st.historySize.get() as { n: number }).n);
  }

  async retryFailed(filter: TaskFilter): Promise<number> {
    return this.write(() => {
      const targets = this.selectTasks({ ...filter, status: 'FAILED' });
      let n = 0;
      const items = new Set<string>();
      for (const t of targets) {
        const row = this.st.resetFailed.get(t.id) as { item_key: string | null } | undefined;
        if (!row) continue;
        n++;
        if (row.item_key !== null) items.add(row.item_key);
      }
      // Their dependents, cancelled because these failed, wait for them again; a reset task
      // whose own need is still dead is cancelled at once instead of waiting forever.
      revive(this.st, filter.batchId, items);
      cascade(this.st, filter.batchId, items, Date.now());
      return n;
    });
  }

  async cancel(filter: TaskFilter): Promise<CancelResult> {
    return this.write(() => {
      const now = Date.now();
      const result: CancelResult = { cancelled: 0, stopping: 0, dependents: 0 };
      const items: (string | null)[] = [];
      for (const t of this.selectTasks({ ...filter, status: undefined })) {
        if (t.status !== 'PENDING' && t.status !== 'RUNNING') continue;
        const row = this.st.cancelTask.get({ id: t.id, reason: 'cancelled', now }) as { status: TaskStatus } | undefined;
        if (!row) continue;
        if (row.status === 'RUNNING') result.stopping++;
        else result.cancelled++;
        items.push(t.item);
      }
      result.dependents = cascade(this.st, filter.batchId, items, now);
      return result;
    });
  }

  async stageCounts(batchId: number): Promise<StageCounts[]> {
    const rows = this.read(() => this.st.stageCounts.all({ batchId }) as (CountDbRow & { stage: string })[]);
    return stageCountsOf(rows);
  }

  async activity(batchId: number): Promise<{ firstStartedAt: number | null; lastFinishedAt: number | null }> {
    const row = this.read(() => this.st.activity.get(batchId) as { first: number | null; last: number | null } | undefined);
    return { firstStartedAt: row?.first ?? null, lastFinishedAt: row?.last ?? null };
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
