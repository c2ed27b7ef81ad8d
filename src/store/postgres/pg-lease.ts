import type { ClaimRequest, ClaimedTask, ReleasedTask, Settlement } from '../task-store.js';
import type { Sql, Statement } from './pg-db.js';
import { toClaimedTask, type TaskDbRow } from '../db-rows.js';
import { cascade, inputsOf } from './pg-stages.js';
import { lateReportNote } from '../late-report.js';
import { lostError } from '../shared/lost.js';
import type { Statements } from './statements.js';

/**
 * The lease verbs (claim, settle, release), each run inside one transaction by the store.
 * Three statements per claim whatever the slot count: lock-and-count, open the attempts,
 * hand each task its attempt id as fencing token.
 */
export async function claim(sql: Sql, st: Statements, req: ClaimRequest): Promise<ClaimedTask[]> {
  if (req.slots.length === 0) return [];
  // As SQLite's markStarted: asking with free slots marks the batch started, even when nothing is due.
  await sql.run(st.markStarted, [req.batchId, req.now]);
  // Under the batch's current job version only (see claimVersion): a claimer whose workers
  // loaded an older definition's handler starts nothing.
  const [version] = await sql.rows<{ job_version: number }>(st.claimVersion, [req.batchId]);
  if (!version || (req.jobVersion !== undefined && version.job_version !== req.jobVersion)) return [];
  const workerIds = req.slots.map((s) => s.workerId);
  const rows = await sql.rows<TaskDbRow & { n: number }>(st.claimTasks, [req.batchId, req.now, req.owner, req.now + req.leaseMs, workerIds]);
  if (rows.length === 0) return [];
  rows.sort((a, b) => a.n - b.n);
  const opened = await sql.rows<{ id: number; task_id: number }>(st.insertAttempts, [
    rows.map((t) => t.id),
    rows.map((t) => t.attempts),
    rows.map((t) => t.worker_id),
    rows.map((t) => req.slots[t.n - 1]!.pid),
    req.host,
    req.owner,
    req.now,
    version.job_version,
  ]);
  const tokens = new Map(opened.map((a) => [a.task_id, a.id]));
  await sql.run(st.setTokens, [rows.map((t) => t.id), rows.map((t) => tokens.get(t.id))]);
  const claimed = [];
  for (const t of rows) claimed.push(toClaimedTask(t, tokens.get(t.id)!, t.worker_id!, await inputsOf(sql, st, t)));
  return claimed;
}

/** Applies each settlement only while its token still holds the task; returns the tokens that did. */
export async function settle(sql: Sql, st: Statements, settlements: Settlement[]): Promise<number[]> {
  const applied = new Set<Settlement>();
  /** Per batch, the latest end of an applied attempt that was not INTERRUPTED. */
  const finished = new Map<number, number>();
  /** Per batch, the items with a stage task that failed or was cancelled: their dependents end too. */
  const ended = new Map<number, string[]>();
  // Task rows locked in id order, batch rows last: two settles cannot deadlock.
  for (const s of [...settlements].sort((a, b) => a.taskId - b.taskId)) {
    const [held] = await sql.rows<{ batch_id: number; status: string; item_key: string | null }>(...fenced(st, s));
    if (!held) continue; // fenced off: another attempt holds the task now
    if (held.item_key !== null && (held.status === 'FAILED' || held.status === 'CANCELLED')) {
      ended.set(held.batch_id, [...(ended.get(held.batch_id) ?? []), held.item_key]);
    }
    const startedAt = s.startedAt ?? null;
    await sql.run(st.endAttempt, [s.token, s.endedAt, s.outcome, s.exitCode, s.signal, s.error, s.durationMs, s.outputTail, s.logPath, startedAt]);
    applied.add(s);
    if (s.outcome !== 'INTERRUPTED') finished.set(held.batch_id, Math.max(finished.get(held.batch_id) ?? s.endedAt, s.endedAt));
  }
  for (const [batchId, items] of ended) await cascade(sql, st, batchId, items, Math.max(...settlements.map((s) => s.endedAt)));
  for (const [batchId, endedAt] of [...finished].sort((a, b) => a[0] - b[0])) await sql.run(st.markFinished, [batchId, endedAt]);
  // A fenced-off report of an attempt recorded LOST: its real end fills in the unknown one.
  for (const s of settlements) {
    if (!applied.has(s)) await sql.run(st.lateEnd, [s.token, s.endedAt, s.durationMs, s.exitCode, s.signal, lateReportNote(s), s.outputTail, s.logPath, s.startedAt ?? null]);
  }
  return settlements.filter((s) => applied.has(s)).map((s) => s.token);
}

/** The task update for a settlement, fenced by its token; returns the task's batch when it applied. */
function fenced(st: Statements, s: Settlement): [Statement, unknown[]] {
  if (s.outcome === 'SUCCESS') return [st.complete, [s.taskId, s.token, s.endedAt, s.error, s.result ?? null, s.startedAt ?? null]];
  if (s.outcome === 'INTERRUPTED') return [st.interrupt, [s.taskId, s.token, s.endedAt]];
  return [st.fail, [s.taskId, s.token, s.endedAt, s.error, s.retryAt ?? null, s.startedAt ?? null]];
}

/** Returns stale RUNNING tasks (expired lease or dead owner, never `self`'s nor a live local owner's) to PENDING, or FAILED when out of attempts. */
export async function releaseStale(
  sql: Sql,
  st: Statements,
  batchId: number | null,
  now: number,
  deadOwners: string[],
  self: string,
  liveOwners: string[],
): Promise<ReleasedTask[]> {
  const released: ReleasedTask[] = [];
  for (const t of await sql.rows<TaskDbRow>(st.staleTasks, [batchId, now, deadOwners, self, liveOwners])) {
    const error = lostError(t.lease_owner, deadOwners);
    const [after] = await sql.rows<{ status: string }>(st.releaseLost, [t.id, now, error]);
    await sql.run(st.loseAttempt, [t.lease_token, error]);
    released.push({ key: t.task_key, owner: t.lease_owner, failed: after!.status !== 'PENDING' });
    if (after!.status !== 'PENDING') await cascade(sql, st, t.batch_id, [t.item_key], now);
  }
  return released;
}
