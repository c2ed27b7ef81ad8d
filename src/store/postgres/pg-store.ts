import { grant } from '../shared/rate-gate.js';
import type {
  Applied,
  AttemptRow,
  AttemptStats,
  BatchAttempt,
  BatchMoves,
  BatchRecord,
  Budget,
  CancelResult,
  ClaimRequest,
  ClaimedTask,
  Counts,
  EnqueueResult,
  ErrorCount,
  NewBatch,
  PendingOutput,
  PruneResult,
  LearnedWork,
  PublishedLevel,
  Rank,
  LostAttempt,
  ReleasedTask,
  RunningOwner,
  Settlement,
  StageCounts,
  TaskFilter,
  TaskOutcome,
  TaskRow,
  TaskSpec,
  EnqueueOptions,
  TaskStatus,
} from '../records.js';
import type { RetryDue, TaskStore } from '../task-store.js';
import type { HookEnd, HookKind, HookRecord, HookTake } from '../hook-records.js';
import { toHook, type OwnerJudge } from '../shared/hook-rows.js';
import * as hooks from './pg-hooks.js';
import { durationKey } from '../task-spec.js';
import { failpoint } from '../failpoint.js';
import { migrate, readIdentity } from './migrate.js';
import { ServerClock } from './pg-clock.js';
import { PgDb } from './pg-db.js';
import { enqueue } from './pg-enqueue.js';
import { atOnce, claim, releaseStale, settle, settleAndClaimAtOnce } from './pg-lease.js';
import { selectTasks, taskIdRange } from './pg-list.js';
import { parsePgUrl } from './pg-target.js';
import { stageCountsOf, toAttemptRow, toBatch, toCounts, toTaskRow, type AttemptDbRow, type BatchDbRow, type CountDbRow, type TaskDbRow } from '../shared/db-rows.js';
import { checkBounds, foldAttemptStats, type AttemptStatsRow } from '../attempt-stats.js';
import { eachOutcomePage, eachTaskPage, toOutcome, type OutcomeDbRow } from '../shared/task-pages.js';
import { pendingOutputOf, type PendingOutputRow } from '../shared/pending-outputs.js';
import * as admin from './pg-admin.js';
import { prepareStatements, type Statements } from './statements.js';

/**
 * The PostgreSQL TaskStore: the SQLite store's tables and semantics in one schema of a
 * shared database, so coordinators on many machines can run one batch. Claims lock rows
 * with FOR UPDATE SKIP LOCKED; every multi-statement verb is one transaction on one
 * pooled connection.
 *
 * Clocks: one rule, the server's clock for every time written (see ServerClock).
 */
export class PostgresStore implements TaskStore {
  private readonly st: Statements;
  private readonly clock = new ServerClock();
  /** What the admin verbs (pg-admin.ts) run on. */
  private readonly c: admin.PgConn;

  private constructor(
    readonly location: string,
    private readonly db: PgDb,
    readonly identity: string,
  ) {
    this.st = prepareStatements(db.target.schema);
    this.c = { db, st: this.st, clock: this.clock };
  }

  /**
   * Opens the store at `url` (postgres://USER:PASSWORD@HOST:PORT/DB[?schema=NAME]) in
   * `options.schema`, else `?schema=`, else `splitdance`; creates (with `create`) or upgrades
   * the schema. Refuses (StoreError, nothing written) a newer or foreign schema. `readonly`
   * (for --dry-run) never writes: no creation, no migration, read-only transactions.
   */
  static async open(url: string, options: { create: boolean; schema?: string; readonly?: boolean; clock?: 'server' | 'caller' }): Promise<PostgresStore> {
    const readonly = options.readonly ?? false;
    const db = new PgDb(parsePgUrl(url, options.schema), readonly);
    try {
      await migrate(db, { create: options.create, readonly });
    } catch (err) {
      await db.close().catch(() => undefined);
      throw err;
    }
    let identity: string;
    try {
      identity = await readIdentity(db);
    } catch (err) {
      await db.close().catch(() => undefined);
      throw err;
    }
    const store = new PostgresStore(db.target.location, db, identity);
    if (options.clock === 'server') await store.clock.measure(db);
    return store;
  }

  async findBatch(name: string): Promise<BatchRecord | undefined> {
    const [row] = await this.db.read((sql) => sql.rows<BatchDbRow>(this.st.batchByName, [name]));
    return row && toBatch(row);
  }

  async latestBatch(): Promise<BatchRecord | undefined> {
    const [row] = await this.db.read((sql) => sql.rows<BatchDbRow>(this.st.latestBatch));
    return row && toBatch(row);
  }

  async listBatches(): Promise<BatchRecord[]> {
    return (await this.db.read((sql) => sql.rows<BatchDbRow>(this.st.listBatches))).map(toBatch);
  }

  async enqueue(batch: NewBatch, specs: Iterable<TaskSpec>, options: EnqueueOptions = {}): Promise<EnqueueResult> {
    return enqueue(this.db, this.st, batch, specs, options, () => this.clock.now());
  }

  async upToDateCount(batchId: number): Promise<number> {
    return this.count(this.st.countUpToDate, [batchId]);
  }

  async changedCount(batchId: number): Promise<number> {
    return this.count(this.st.countChanged, [batchId]);
  }

  async lastSeq(batchId: number): Promise<number> {
    return Number(await this.count(this.st.lastSeq, [batchId]));
  }

  async updateJob(batchId: number, job: Record<string, unknown>, budget: Budget): Promise<number> {
    return admin.updateJob(this.c, batchId, job, budget);
  }

  async rerank(batchId: number, ranks: Rank[], patch?: Record<string, unknown>): Promise<number> {
    return admin.rerank(this.c, batchId, ranks, patch);
  }

  async setPaused(batchId: number, paused: boolean): Promise<void> {
    return admin.setPaused(this.c, batchId, paused);
  }

  async takeStarts(batchId: number, want: number, now: number, spacingMs: number, burst: number): Promise<{ granted: number; wakeAt: number }> {
    const t = this.clock.toServer(now);
    const gate = await this.db.transaction(async (sql) => {
      await sql.run(this.st.makeRateGate, [batchId]);
      const [row] = await sql.rows<{ next_at: number }>(this.st.rateGate, [batchId]);
      const g = grant(row!.next_at === 0 ? null : Number(row!.next_at), want, t, spacingMs, burst);
      if (g.granted > 0) await sql.run(this.st.moveRateGate, [batchId, g.next]);
      return g;
    });
    return { granted: gate.granted, wakeAt: this.clock.fromServer(gate.wakeAt) };
  }

  async takeHook(take: HookTake, judge: OwnerJudge): Promise<{ taken: boolean; record: HookRecord }> {
    const t = { ...take, now: this.clock.toServer(take.now) };
    const { taken, row } = await this.db.transaction((sql) => hooks.takeHook(sql, this.st, t, this.identity, judge));
    return { taken, record: toHook(row, (ms) => this.clock.fromServer(ms)) };
  }

  async renewHook(batchId: number, hook: HookKind, endMark: string, owner: string, leaseExpiresAt: number): Promise<boolean> {
    return this.db.transaction((sql) => hooks.renewHook(sql, this.st, batchId, hook, endMark, owner, this.clock.toServer(leaseExpiresAt)));
  }

  async endHook(batchId: number, hook: HookKind, endMark: string, owner: string, end: HookEnd): Promise<boolean> {
    return this.db.transaction((sql) => hooks.endHook(sql, this.st, batchId, hook, endMark, owner, { ...end, endedAt: this.clock.toServer(end.endedAt) }));
  }

  async hooksOf(batchId: number): Promise<HookRecord[]> {
    return this.db.read((sql) => hooks.hooksOf(sql, this.st, batchId, (ms) => this.clock.fromServer(ms)));
  }

  async keyGateOpensAt(batchId: number, now: number): Promise<number | null> {
    const [row] = await this.db.read((sql) => sql.rows<{ at: number | string | null }>(this.st.nextKeyGate, [batchId, this.clock.toServer(now)]));
    return row!.at === null ? null : this.clock.fromServer(Number(row!.at));
  }

  async publishLevel(batchId: number, owner: string, level: { level: number; max: number; pace: number | null } | null, now: number): Promise<void> {
    if (level) await this.db.transaction((sql) => sql.run(this.st.publishLevel, [batchId, owner, level.level, level.max, level.pace, this.clock.toServer(now)]));
    else await this.db.transaction((sql) => sql.run(this.st.dropLevel, [batchId, owner]));
  }

  async claim(req: ClaimRequest): Promise<ClaimedTask[]> {
    if (req.slots.length === 0 && !req.started?.length) return [];
    return this.db.transaction((sql) => claim(sql, this.st, this.clock.claim(req), () => this.clock.toServer(Date.now())));
  }

  /** A coordinator's tick in one transaction: commit what finished, then claim for the free slots. */
  async settleAndClaim(settlements: Settlement[], req: ClaimRequest, placed: { taskId: number; temp: string }[] = []): Promise<{ applied: Applied[]; claimed: ClaimedTask[] }> {
    if (settlements.length === 0 && req.slots.length === 0 && !req.started?.length && placed.length === 0) return { applied: [], claimed: [] };
    const onServer = this.clock.settlements(settlements);
    // The common tick, successes and a claim: one statement, one round trip (tick-statement.ts).
    if (atOnce(onServer, placed) && !req.keyed) return this.db.autocommit((sql) => settleAndClaimAtOnce(sql, this.st, onServer, this.clock.claim(req)));
    return this.db.transaction(async (sql) => {
      if (placed.length) await sql.run(this.st.outputsPlaced, [placed.map((p) => p.taskId), placed.map((p) => p.temp)]);
      return { applied: await settle(sql, this.st, onServer), claimed: await claim(sql, this.st, this.clock.claim(req), () => this.clock.toServer(Date.now())) };
    });
  }

  async heartbeat(owner: string, leaseExpiresAt: number): Promise<number[]> {
    // One statement, but in `transaction` so a deadlock with a settle is retried, not reported.
    const rows = await this.db.transaction(async (sql) => {
      // On the server's clock, the lease's length as the caller meant it; the caller's own time only in the contract tests.
      const from = this.clock.leaseBase(leaseExpiresAt);
      const held = await sql.rows<{ token: number | string }>(this.st.heartbeat, [owner, from, from === null ? leaseExpiresAt - Date.now() : 0]);
      failpoint('freeze');
      return held;
    });
    return rows.map((r) => Number(r.token));
  }

  /** Nothing to move: retries are stored on the server's clock, and the ServerClock follows this process's steps. */
  async shiftRetries(): Promise<RetryDue[]> {
    return [];
  }

  async settle(settlements: Settlement[]): Promise<Applied[]> {
    if (settlements.length === 0) return [];
    const onServer = this.clock.settlements(settlements);
    return this.db.transaction((sql) => settle(sql, this.st, onServer));
  }

  async statuses(taskIds: number[]): Promise<Map<number, TaskStatus>> {
    if (taskIds.length === 0) return new Map();
    const rows = await this.db.read((sql) => sql.rows<{ id: number; status: TaskStatus }>(this.st.statuses, [taskIds]));
    return new Map(rows.map((r) => [r.id, r.status]));
  }

  async pendingOutputs(batchId: number | null): Promise<PendingOutput[]> {
    const rows = await this.db.read((sql) => (batchId === null ? sql.rows<PendingOutputRow>(this.st.allPendingOutputs, []) : sql.rows<PendingOutputRow>(this.st.pendingOutputs, [batchId])));
    return rows.map(pendingOutputOf);
  }

  async outputsPlaced(placed: { taskId: number; temp: string }[]): Promise<void> {
    if (placed.length === 0) return;
    await this.db.transaction((sql) => sql.run(this.st.outputsPlaced, [placed.map((p) => p.taskId), placed.map((p) => p.temp)]));
  }

  async runningOwners(batchId: number | null, now: number): Promise<RunningOwner[]> {
    const rows = await this.db.read((sql) => sql.rows<{ owner: string; lease_end: number | string; expired: boolean }>(this.st.runningOwners, [batchId, this.clock.leaseBase(now)]));
    return rows.map((r) => ({ owner: r.owner, leaseEnd: Number(r.lease_end), expired: r.expired }));
  }

  async releaseStale(batchId: number | null, now: number, deadOwners: string[], self: string, liveOwners: string[] = [], beforeRelease?: (lost: LostAttempt[]) => void): Promise<ReleasedTask[]> {
    return this.db.transaction((sql) => releaseStale(sql, this.st, batchId, this.clock.leaseBase(now), this.clock.toServer(now), deadOwners, self, liveOwners, beforeRelease));
  }

  async counts(batchId: number): Promise<Counts> {
    return toCounts(await this.db.read((sql) => sql.rows<CountDbRow>(this.st.counts, [batchId])));
  }

  async progress(batchId: number): Promise<BatchMoves> {
    const [row] = await this.db.read((sql) => sql.rows<{ open: boolean; last: number | null }>(this.st.progress, [batchId]));
    return { unfinished: row?.open === true, lastFinishedAt: row?.last ?? null };
  }

  async learnedWork(batchId: number): Promise<LearnedWork> {
    const [r] = await this.db.read((sql) => sql.rows<Record<'open_known' | 'open_ms' | 'done_known' | 'done_ms', string>>(this.st.learnedWork, [batchId]));
    return { openKnown: Number(r!.open_known), openMs: Number(r!.open_ms), doneKnown: Number(r!.done_known), doneMs: Number(r!.done_ms) };
  }

  async adaptiveLevels(batchId: number, since: number): Promise<PublishedLevel[]> {
    const rows = await this.db.read((sql) => sql.rows<{ owner: string; level: number; max_level: number; pace: number | null; updated_at: number }>(this.st.adaptiveLevels, [batchId, this.clock.toServer(since)]));
    return rows.map((r) => ({ owner: r.owner, level: r.level, max: r.max_level, pace: r.pace === null ? null : Number(r.pace), updatedAt: this.clock.fromServer(Number(r.updated_at)) }));
  }

  async nextDueAt(batchId: number): Promise<number | null> {
    const [row] = await this.db.read((sql) => sql.rows<{ due: number | null }>(this.st.nextDue, [batchId]));
    return row!.due === null ? null : this.clock.fromServer(Number(row!.due));
  }

  async lastRetryDueAt(batchId: number): Promise<number | null> {
    const [row] = await this.db.read((sql) => sql.rows<{ due: number | string }>(this.st.lastRetryDue, [batchId]));
    return row ? this.clock.fromServer(Number(row.due)) : null;
  }

  async topErrors(batchId: number, limit: number): Promise<ErrorCount[]> {
    return this.db.read((sql) => sql.rows<ErrorCount>(this.st.failedErrors, [batchId, limit]));
  }

  async listTasks(filter: TaskFilter): Promise<TaskRow[]> {
    return this.db.transaction((sql) => selectTasks(sql, this.st, filter));
  }

  async eachTaskPage(filter: TaskFilter, onPage: (tasks: TaskRow[]) => Promise<void>): Promise<void> {
    const range = await this.db.read((sql) => taskIdRange(sql, this.st, filter.batchId));
    const sqlPart = [filter.batchId, filter.status ?? null, filter.attemptedOnly ? true : null, filter.errorContains ?? null];
    await eachTaskPage(range, filter, (from, to) => this.db.read((sql) => sql.rows<TaskDbRow>(this.st.taskPage, [...sqlPart, from, to])), onPage);
  }

  async eachOutcomePage(filter: Pick<TaskFilter, 'batchId' | 'status' | 'attemptedOnly'>, onPage: (rows: TaskOutcome[]) => Promise<void>): Promise<void> {
    const range = await this.db.read((sql) => taskIdRange(sql, this.st, filter.batchId));
    const sqlPart = [filter.batchId, filter.status ?? null, filter.attemptedOnly ? true : null];
    await eachOutcomePage(range, async (from, to) => (await this.db.read((sql) => sql.rows<OutcomeDbRow>(this.st.outcomePage, [...sqlPart, from, to]))).map(toOutcome), onPage);
  }

  async runningTasks(batchId: number, limit: number): Promise<TaskRow[]> {
    return (await this.db.read((sql) => sql.rows<TaskDbRow>(this.st.runningTasks, [batchId, limit]))).map(toTaskRow);
  }

  async getTask(batchId: number, key: string): Promise<TaskRow | undefined> {
    const [row] = await this.db.read((sql) => sql.rows<TaskDbRow>(this.st.taskByKey, [batchId, key, key.split('/')[0]]));
    return row && toTaskRow(row);
  }

  async attemptsOf(taskId: number): Promise<AttemptRow[]> {
    return (await this.db.read((sql) => sql.rows<AttemptDbRow>(this.st.attemptsOf, [taskId]))).map(toAttemptRow);
  }

  async recentAttempts(batchId: number, limit: number): Promise<BatchAttempt[]> {
    const rows = await this.db.read((sql) => sql.rows<AttemptDbRow & { task_key: string }>(this.st.batchAttempts, [batchId, limit]));
    return rows.reverse().map((r) => ({ ...toAttemptRow(r), key: r.task_key, owner: r.owner }));
  }

  async batchAttempts(batchId: number, limit: number): Promise<{ attempts: BatchAttempt[]; total: number }> {
    const attempts = await this.recentAttempts(batchId, limit);
    const [{ n }] = (await this.db.read((sql) => sql.rows<{ n: number }>(this.st.batchAttemptCount, [batchId]))) as [{ n: number }];
    return { attempts, total: Number(n) };
  }

  async pruneFinished(before: number, onChunk?: (batch: string, logPaths: string[]) => void, only?: number): Promise<PruneResult> {
    return admin.pruneFinished(this.c, before, onChunk, only);
  }

  async prunableBatches(before: number, only?: number): Promise<BatchRecord[]> {
    const cutoff = this.clock.toServer(before);
    return (await this.db.read((sql) => sql.rows<BatchDbRow>(this.st.finishedBatches, [cutoff, only ?? null]))).map((b) => toBatch(b));
  }

  async historySize(): Promise<number> {
    return this.count(this.st.historySize, []);
  }

  async learnedDurations(source: string): Promise<Map<string, number>> {
    const rows = await this.db.read((sql) => sql.rows<{ stage: string; key: string; ms: string }>(this.st.learnedDurations, [source]));
    return new Map(rows.map((r) => [durationKey(r.stage, r.key), Number(r.ms)]));
  }

  async retryFailed(filter: TaskFilter): Promise<number> {
    return admin.retryFailed(this.c, filter);
  }

  async cancel(filter: Pick<TaskFilter, 'batchId' | 'keyMatches'>): Promise<CancelResult> {
    return admin.cancel(this.c, filter);
  }

  async stageCounts(batchId: number): Promise<StageCounts[]> {
    return stageCountsOf(await this.db.read((sql) => sql.rows<CountDbRow & { stage: string }>(this.st.stageCounts, [batchId])));
  }

  async attemptStats(batchId: number, boundsMs: readonly number[]): Promise<AttemptStats> {
    const bounds = checkBounds(boundsMs);
    return foldAttemptStats(await this.db.read((sql) => sql.rows<AttemptStatsRow>(this.st.attemptStats, [batchId, bounds])), bounds);
  }

  async activity(batchId: number): Promise<{ firstStartedAt: number | null; lastFinishedAt: number | null }> {
    const [row] = await this.db.read((sql) => sql.rows<{ first: number | null; last: number | null }>(this.st.activity, [batchId]));
    return { firstStartedAt: row?.first ?? null, lastFinishedAt: row?.last ?? null };
  }

  async close(): Promise<void> {
    await this.db.close();
  }


  private async count(st: Statements[keyof Statements], values: unknown[]): Promise<number> {
    const [row] = await this.db.read((sql) => sql.rows<{ n: number }>(st, values));
    return row!.n;
  }
}
