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
import { openSqlite, readIdentity, storeError } from './open-sqlite.js';
import { prepareStatements, type Statements } from './statements.js';
import {
  stageCountsOf,
  toAttemptRow,
  toBatch,
  toClaimedTask,
  toCounts,
  toSibling,
  toTaskRow,
  type AttemptDbRow,
  type BatchDbRow,
  type ClaimedDbRow,
  type CountDbRow,
  type SiblingDbRow,
  type TaskDbRow,
} from '../db-rows.js';
import { cascadeCancel, cascadeRevive, type Sibling } from '../stage-graph.js';
import { failpoint } from '../failpoint.js';
import { budgets } from '../budget.js';
import { lateReportNote } from '../late-report.js';
import { PRUNE_CHUNK, pruneInChunks, type PruneStep } from '../prune-in-chunks.js';

const STAGING_CHUNK = 5000;
/**
 * Successes are committed in groups whose JSON list stays near GROUP_CHARS (a list is one
 * string, and a string has a size limit); a result longer than GROUP_RESULT_MAX goes on its
 * own, bound as a parameter, as it would not gain from a group anyway.
 */
const GROUP_CHARS = 4 * 1024 * 1024;
const GROUP_RESULT_MAX = 256 * 1024;

/** The parameters of lateEnd for a fenced-off settlement. */
function lateEnd(s: Settlement) {
  const { token, endedAt, durationMs, exitCode, signal, outputTail, logPath } = s;
  return { token, endedAt, durationMs, exitCode, signal, note: lateReportNote(s), outputTail, logPath, startedAt: s.startedAt ?? null };
}

/** Consecutive runs of settlements whose texts add up to about GROUP_CHARS at most. */
function* bySize(settlements: Settlement[]): Generator<Settlement[]> {
  let group: Settlement[] = [];
  let chars = 0;
  for (const s of settlements) {
    const size = 100 + (s.result?.length ?? 0) + (s.outputTail?.length ?? 0) + (s.logPath?.length ?? 0);
    if (group.length > 0 && chars + size > GROUP_CHARS) {
      yield group;
      group = [];
      chars = 0;
    }
    group.push(s);
    chars += size;
  }
  if (group.length > 0) yield group;
}

/**
 * The SQLite TaskStore. better-sqlite3 is synchronous; the async interface exists for
 * the PostgreSQL backend. Every write is one short `BEGIN IMMEDIATE` transaction, so a
 * writer waits for the lock up front (busy_timeout) instead of failing half-way.
 */
export class SqliteStore implements TaskStore {
  private readonly db: Database.Database;
  private readonly st: Statements;

  readonly identity: string;

  private constructor(readonly location: string, db: Database.Database) {
    this.db = db;
    this.identity = readIdentity(db);
    // Per connection and never in the store file (a read-only store can have one too).
    db.exec(`CREATE TEMP TABLE staging (task_key TEXT NOT NULL, payload TEXT NOT NULL, fingerprint TEXT,
      stage TEXT NOT NULL, item_key TEXT, needs TEXT, max_attempts INTEGER)`);
    this.st = prepareStatements(db);
  }

  static open(path: string, options: { create: boolean; readonly?: boolean }): SqliteStore {
    const db = openSqlite(path, options);
    try {
      return new SqliteStore(path, db);
    } catch (err) {
      db.close();
      throw storeError(err, path);
    }
  }

  /** Runs `fn` in a BEGIN IMMEDIATE transaction, mapping driver errors to StoreError. */
  private write<T>(fn: () => T): T {
    try {
      const result = this.db.transaction(fn).immediate();
      failpoint('write');
      return result;
    } catch (err) {
      throw storeError(err, this.location);
    }
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
    // Stage rows in a TEMP table first: that holds no lock on the store, so a long
    // directory walk never blocks other runs; the store then changes in one short
    // transaction, all tasks or none.
    this.read(() => this.db.exec('DELETE FROM temp.staging'));
    const stage = this.db.prepare(
      'INSERT INTO temp.staging (task_key, payload, fingerprint, stage, item_key, needs, max_attempts) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    let chunk: TaskSpec[] = [];
    const flush = this.db.transaction((rows: TaskSpec[]) => {
      for (const s of rows) {
        const needs = s.needs?.length ? JSON.stringify(s.needs) : null;
        stage.run(s.key, JSON.stringify(s.payload), s.fingerprint, s.stage ?? '', s.item ?? null, needs, s.maxAttempts ?? null);
      }
    });
    this.read(() => {
      for (const spec of specs) {
        chunk.push(spec);
        if (chunk.length >= STAGING_CHUNK) {
          flush(chunk);
          chunk = [];
        }
      }
      flush(chunk);
    });
    const now = Date.now();
    const result = this.write(() => {
      let row = this.st.batchByName.get(batch.name) as BatchDbRow | undefined;
      const created = !row;
      if (!row) {
        this.st.insertBatch.run({ name: batch.name, source: batch.source, job: JSON.stringify(batch.job), now });
        row = this.st.batchByName.get(batch.name) as BatchDbRow;
      }
      const { base } = this.st.maxSeq.get(row.id) as { base: number };
      const { base: idBase } = this.st.taskIdBase.get() as { base: number };
      const inserted = this.st.insertStaged.run({ batchId: row.id, base, idBase, maxAttempts: batch.maxAttempts, now }).changes;
      if (!created) this.st.observeStaged.run({ batchId: row.id });
      const requeued = options.rerunChanged ? this.st.requeueChanged.run({ batchId: row.id }).changes : 0;
      const { n: changed } = this.st.countChanged.get({ batchId: row.id }) as { n: number };
      return { batch: toBatch(row), created, inserted, changed, requeued };
    });
    this.read(() => this.db.exec('DELETE FROM temp.staging'));
    return result;
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
      for (const [stage, maxAttempts] of budgets(budget)) this.st.updateMaxAttempts.run({ batchId, maxAttempts, stage });
      const failed = this.st.failExhausted.all({ batchId, now }) as { item_key: string | null }[];
      this.cascade(batchId, failed.map((r) => r.item_key), now);
      return row?.job_version ?? 0;
    });
  }

  /** Cancels the dependents of the items' failed or cancelled stage tasks (transitively). */
  private cascade(batchId: number, items: Iterable<string | null>, now: number): number {
    let n = 0;
    for (const item of new Set(items)) {
      if (item === null) continue;
      for (const c of cascadeCancel(this.siblings(batchId, item))) n += this.st.cancelPending.run({ id: c.id, reason: c.reason, now }).changes;
    }
    return n;
  }

  private siblings(batchId: number, item: string): Sibling[] {
    return (this.st.siblings.all({ batchId, item }) as SiblingDbRow[]).map(toSibling);
  }

  async claim(req: ClaimRequest): Promise<ClaimedTask[]> {
    if (req.slots.length === 0) return [];
    return this.write(() => this.claimIn(req));
  }

  /**
   * One transaction for a coordinator's tick: commit the finished attempts, then claim for
   * the free slots. Halves the commits per task compared with settle + claim.
   */
  async settleAndClaim(settlements: Settlement[], req: ClaimRequest): Promise<{ applied: number[]; claimed: ClaimedTask[] }> {
    if (settlements.length === 0 && req.slots.length === 0) return { applied: [], claimed: [] };
    return this.write(() => ({ applied: this.settleIn(settlements), claimed: this.claimIn(req) }));
  }

  /**
   * Claims up to one task per slot, in index order, with one statement per step for the
   * whole group (per-row statements cost about 2.5× as much in SQLite): pick the due tasks,
   * claim them, write their attempt rows. All in the caller's transaction.
   */
  private claimIn(req: ClaimRequest): ClaimedTask[] {
    if (req.slots.length === 0) return [];
    const stored = this.st.jobVersion.get(req.batchId) as { job_version: number } | undefined;
    // The claimer's workers loaded another definition's handler: it must not start anything.
    if (!stored || (req.jobVersion !== undefined && stored.job_version !== req.jobVersion)) return [];
    const ids = (this.st.dueTasks.all({ batchId: req.batchId, now: req.now, n: req.slots.length }) as { id: number }[]).map((r) => r.id);
    if (ids.length === 0) return [];
    const { id: first } = this.st.nextAttemptId.get() as { id: number };
    const list = JSON.stringify(ids.map((id, i) => [id, req.slots[i]!.workerId, first + i, req.slots[i]!.pid]));
    const rows = this.st.claimMany.all({ list, owner: req.owner, expires: req.now + req.leaseMs, now: req.now }) as ClaimedDbRow[];
    this.st.insertAttempts.run({ list, host: req.host, owner: req.owner, now: req.now, jobVersion: stored.job_version });
    this.st.markStarted.run({ batchId: req.batchId, now: req.now });
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.map((id, i) => {
      const row = byId.get(id)!;
      return toClaimedTask(row, first + i, req.slots[i]!.workerId, this.inputsOf(row));
    });
  }

  /** The stored results of the stages a task needs, by stage. */
  private inputsOf(t: ClaimedDbRow): Record<string, unknown> {
    if (t.needs === null || t.item_key === null) return {};
    const rows = this.st.inputs.all({ batchId: t.batch_id, item: t.item_key, stages: t.needs }) as { stage: string; result: string | null }[];
    return Object.fromEntries(rows.map((r) => [r.stage, r.result === null ? null : JSON.parse(r.result)]));
  }

  async heartbeat(owner: string, leaseExpiresAt: number): Promise<number[]> {
    return this.write(() => (this.st.heartbeat.all({ owner, expires: leaseExpiresAt }) as { token: number }[]).map((r) => r.token));
  }

  async settle(settlements: Settlement[]): Promise<number[]> {
    if (settlements.length === 0) return [];
    return this.write(() => this.settleIn(settlements));
  }

  /**
   * Commits the outcomes, each fenced by its token; returns the tokens that still held
   * their task, in the order given. Successes, the common case, take two statements for
   * the whole group; other outcomes go one by one, as each may end its task and cancel
   * dependents.
   */
  private settleIn(settlements: Settlement[]): number[] {
    const applied: number[] = [];
    const finished = new Map<number, number>(); // batch → latest end of an outcome other than INTERRUPTED
    const noteEnd = (batchId: number, endedAt: number) => finished.set(batchId, Math.max(finished.get(batchId) ?? endedAt, endedAt));
    const ended = new Map<number, (string | null)[]>(); // batch → items with a stage task that failed or was cancelled
    const seen = new Map<number, number>();
    for (const s of settlements) seen.set(s.taskId, (seen.get(s.taskId) ?? 0) + 1);
    // A task listed twice (a lease taken over and claimed again) and a large result go row by row.
    const grouped = settlements.filter((s) => s.outcome === 'SUCCESS' && seen.get(s.taskId) === 1 && (s.result?.length ?? 0) <= GROUP_RESULT_MAX);
    const byTask = new Map(grouped.map((s) => [s.taskId, s]));
    for (const group of bySize(grouped)) {
      const list = JSON.stringify(group.map((s) => [s.taskId, s.token, s.endedAt, s.result ?? null]));
      const done: Settlement[] = [];
      for (const row of this.st.completeMany.all({ list }) as { id: number; batch_id: number }[]) {
        const s = byTask.get(row.id)!;
        noteEnd(row.batch_id, s.endedAt);
        done.push(s);
        applied.push(s.token);
      }
      const ends = done.map((s) => [s.token, s.endedAt, s.durationMs, s.exitCode, s.signal, s.outputTail, s.logPath, s.startedAt ?? null]);
      if (ends.length > 0) this.st.endSuccesses.run({ list: JSON.stringify(ends) });
    }
    for (const s of settlements) {
      if (byTask.get(s.taskId) === s) continue;
      const fenced = { taskId: s.taskId, token: s.token, endedAt: s.endedAt, error: s.error };
      type After = { batch_id: number; status: TaskStatus; item_key: string | null } | undefined;
      const row = (
        s.outcome === 'SUCCESS'
          ? this.st.complete.get({ ...fenced, result: s.result ?? null })
          : s.outcome === 'INTERRUPTED'
            ? this.st.interrupt.get({ taskId: s.taskId, token: s.token, endedAt: s.endedAt })
            : this.st.fail.get({ ...fenced, retryAt: s.retryAt ?? null })
      ) as After;
      if (!row) continue; // fenced off: another attempt holds the task now
      if (s.outcome !== 'INTERRUPTED') noteEnd(row.batch_id, s.endedAt);
      if (row.item_key !== null && (row.status === 'FAILED' || row.status === 'CANCELLED')) {
        ended.set(row.batch_id, [...(ended.get(row.batch_id) ?? []), row.item_key]);
      }
      this.st.endAttempt.run({
        token: s.token,
        endedAt: s.endedAt,
        outcome: s.outcome,
        exitCode: s.exitCode,
        signal: s.signal,
        error: s.error,
        durationMs: s.durationMs,
        outputTail: s.outputTail,
        logPath: s.logPath,
        startedAt: s.startedAt ?? null,
      });
      applied.push(s.token);
    }
    for (const [batchId, endedAt] of finished) this.st.markFinished.run({ batchId, endedAt });
    for (const [batchId, items] of ended) this.cascade(batchId, items, Date.now());
    const held = new Set(applied);
    for (const s of settlements) if (!held.has(s.token)) this.st.lateEnd.run(lateEnd(s)); // a LOST attempt's real end

    return settlements.filter((s) => held.delete(s.token)).map((s) => s.token); // in the order given
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
      for (const t of ended) this.cascade(t.batch_id, [t.item_key], now);
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

  private selectTasks(filter: TaskFilter): TaskRow[] {
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
      for (const item of items) for (const id of cascadeRevive(this.siblings(filter.batchId, item))) this.st.revive.run(id);
      this.cascade(filter.batchId, items, Date.now());
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
      result.dependents = this.cascade(filter.batchId, items, now);
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
