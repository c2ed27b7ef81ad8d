import type { Applied, ClaimRequest, ClaimedTask, LostAttempt, ReleasedTask, Settlement, TaskStatus } from '../records.js';
import type { Sql } from './pg-db.js';
import { toClaimedTask, toLost, type TaskDbRow } from '../shared/db-rows.js';
import { cascade, inputsOf } from './pg-stages.js';
import { lateReportNote } from '../shared/late-report.js';
import { lostError } from '../shared/lost.js';
import { grant } from '../shared/rate-gate.js';
import { inputsByStage } from '../shared/json-columns.js';
import type { Statements } from './statements.js';

/**
 * The lease verbs (claim, settle, release), each run inside one transaction by the store.
 * Two statements per claim whatever the slot count: the batch's job version, then the claim
 * itself (see claimTasks); a stage task that needs others' results reads them too.
 */
export async function claim(sql: Sql, st: Statements, req: ClaimRequest & { leaseFrom: number | null }, clockNow: () => number = Date.now): Promise<ClaimedTask[]> {
  if (req.started?.length) {
    const s = req.started;
    await sql.run(st.markRunning, [s.map((x) => x.taskId), s.map((x) => x.token), s.map((x) => x.at)]);
  }
  if (req.slots.length === 0) return [];
  // Under the batch's current job version only (see claimVersion): a claimer whose workers
  // loaded an older definition's handler starts nothing.
  const [version] = await sql.rows<{ job_version: number; first_started_at: number | null }>(st.claimVersion, [req.batchId]);
  if (!version) return [];
  // As SQLite's markStarted: asking with free slots marks the batch started, even when nothing is due.
  // Written once: later claims only read the row, so it never becomes a hot row.
  if (version.first_started_at === null) await sql.run(st.markStarted, [req.batchId, req.now]);
  if (req.jobVersion !== undefined && version.job_version !== req.jobVersion) return [];
  const rows = req.keyed ? await claimKeyed(sql, st, req, version.job_version, req.keyed, clockNow) : await sql.rows<ClaimedRow>(st.claimTasks, claimParams(req, version.job_version));
  const claimed = [];
  for (const t of rows) claimed.push(toClaimedTask(t, Number(t.lease_token), t.worker_id!, await inputsOf(sql, st, t)));
  return claimed;
}

type ClaimedRow = TaskDbRow & { n: number; lease_token: number | string; rate_key: string };

/**
 * --rate-key: one task a slot, each from a key whose gate is open at the claim's time, each
 * key's gate moved on as its task is claimed. The batch's rate gate row is held first, so
 * keyed claims of the batch on every host take turns and none sees a gate another is moving;
 * the claim's time is then read again (`clockNow`, the store's clock), as the wait for the row
 * may have been long: a gate is never moved from a time another claimer has passed.
 */
async function claimKeyed(
  sql: Sql,
  st: Statements,
  asked: ClaimRequest & { leaseFrom: number | null },
  jobVersion: number,
  { spacingMs, burst }: { spacingMs: number; burst: number },
  clockNow: () => number,
): Promise<ClaimedRow[]> {
  await sql.run(st.makeRateGate, [asked.batchId]);
  await sql.run(st.rateGate, [asked.batchId]);
  const req = { ...asked, now: Math.max(asked.now, clockNow()) };
  const rows: ClaimedRow[] = [];
  for (const slot of req.slots) {
    const [row] = await sql.rows<ClaimedRow>(st.claimKeyed, claimParams({ ...req, slots: [slot] }, jobVersion));
    if (!row) break;
    const [gate] = await sql.rows<{ next_at: number | string }>(st.keyGate, [req.batchId, row.rate_key]);
    await sql.run(st.moveKeyGate, [req.batchId, row.rate_key, grant(gate ? Number(gate.next_at) : null, 1, req.now, spacingMs, burst).next]);
    rows.push(row);
  }
  return rows;
}

/**
 * Applies each settlement only while its token still holds the task; returns those that did,
 * in the order given, with the status each task was left in. One statement whatever the count (tasks, attempts, the batches' latest finish), one more
 * for late reports of attempts already recorded LOST, and the stage cascade of failed items.
 */
export async function settle(sql: Sql, st: Statements, settlements: Settlement[]): Promise<Applied[]> {
  const ss = [...settlements].sort((a, b) => a.taskId - b.taskId);
  const held = await sql.rows<{ token: number | string; batch_id: number; status: TaskStatus; item_key: string | null }>(st.settleTasks, reportParams(ss));
  const byToken = new Map(held.map((h) => [Number(h.token), h]));
  const applied = ss.filter((s) => byToken.has(s.token)); // the others were fenced off: another attempt holds the task now
  /** Per batch, the items with a stage task that failed or was cancelled: their dependents end too. */
  const ended = new Map<number, string[]>();
  for (const s of applied) {
    const h = byToken.get(s.token)!;
    if (h.item_key !== null && (h.status === 'FAILED' || h.status === 'CANCELLED')) ended.set(h.batch_id, [...(ended.get(h.batch_id) ?? []), h.item_key]);
  }
  for (const [batchId, items] of ended) await cascade(sql, st, batchId, items, Math.max(...settlements.map((s) => s.endedAt)));
  // A fenced-off report of an attempt recorded LOST: its real end fills in the unknown one.
  const late = ss.filter((s) => !byToken.has(s.token));
  if (late.length > 0) {
    await sql.run(st.lateEnds, [
      late.map((s) => s.token),
      late.map((s) => s.endedAt),
      late.map((s) => s.durationMs),
      late.map((s) => s.exitCode),
      late.map((s) => s.signal),
      late.map((s) => lateReportNote(s)),
      late.map((s) => s.outputTail),
      late.map((s) => s.logPath),
      late.map((s) => s.startedAt ?? null),
    ]);
  }
  return appliedOf(settlements, new Map(held.map((h) => [Number(h.token), h.status])));
}

/** The settlements whose token held its task (`held`: token → the status it was left in), in the order given. */
function appliedOf(settlements: Settlement[], held: ReadonlyMap<number, TaskStatus>): Applied[] {
  return settlements.flatMap((s) => {
    const status = held.get(s.token);
    return status === undefined ? [] : [{ token: s.token, status }];
  });
}

/**
 * Returns stale RUNNING tasks (expired lease or dead owner, never `self`'s nor a live local
 * owner's) to PENDING, or FAILED when out of attempts. `leaseNow`: what a lease is expired at
 * (null: the server's clock); `now` stamps what changes.
 */
export async function releaseStale(
  sql: Sql,
  st: Statements,
  batchId: number | null,
  leaseNow: number | null,
  now: number,
  deadOwners: string[],
  self: string,
  liveOwners: string[],
  beforeRelease?: (lost: LostAttempt[]) => void,
): Promise<ReleasedTask[]> {
  const stale = await sql.rows<TaskDbRow>(st.staleTasks, [batchId, leaseNow, deadOwners, self, liveOwners]);
  // A stage's inputs: what renders an `{inputs…}` output path, to find the attempt's temporary file.
  const lost: LostAttempt[] = [];
  for (const t of stale) lost.push(toLost(t, await inputsOf(sql, st, t)));
  beforeRelease?.(lost);
  const released: ReleasedTask[] = [];
  for (const [i, t] of stale.entries()) {
    const error = lostError(t.lease_owner, deadOwners);
    const [after] = await sql.rows<{ status: string }>(st.releaseLost, [t.id, now, error]);
    await sql.run(st.loseAttempt, [t.lease_token, error]);
    released.push({ ...lost[i]!, failed: after!.status !== 'PENDING' });
    if (after!.status !== 'PENDING') await cascade(sql, st, t.batch_id, [t.item_key], now);
  }
  return released;
}

/** The claim's parameters $1–$10 (claimTasks; in tickStatement $8 is the version expected, NULL for any). */
function claimParams(req: ClaimRequest & { leaseFrom: number | null }, jobVersion: number | null): unknown[] {
  return [
    req.batchId,
    req.now,
    req.owner,
    req.leaseMs,
    req.slots.map((s) => s.workerId),
    req.host,
    req.slots.map((s) => s.pid),
    jobVersion,
    req.leaseFrom,
    req.slots.map((s) => s.queued ?? false),
  ];
}

/** The settle's parameters $1–$15 (settleTasks), for reports in task id order. */
function reportParams(ss: Settlement[]): unknown[] {
  return [
    ss.map((s) => s.taskId),
    ss.map((s) => s.token),
    ss.map((s) => s.outcome),
    ss.map((s) => s.endedAt),
    ss.map((s) => s.error),
    ss.map((s) => (s.outcome === 'SUCCESS' ? (s.result ?? null) : null)),
    ss.map((s) => (s.outcome === 'SUCCESS' || s.outcome === 'INTERRUPTED' ? null : (s.retryAt ?? null))),
    ss.map((s) => s.startedAt ?? null),
    ss.map((s) => s.exitCode),
    ss.map((s) => s.signal),
    ss.map((s) => s.durationMs),
    ss.map((s) => s.outputTail),
    ss.map((s) => s.logPath),
    ss.map((s) => s.upToDate === true),
    ss.map((s) => (s.outcome === 'SUCCESS' ? (s.outputTemp ?? null) : null)),
  ];
}

/** Whether settleAndClaimAtOnce can carry a tick: successes only (no failure cascades to an item's stages), no outputs placed. */
export function atOnce(settlements: Settlement[], placed: unknown[]): boolean {
  return placed.length === 0 && settlements.every((s) => s.outcome === 'SUCCESS');
}

/**
 * A tick of successes in one statement that commits on its own (tickStatement): the same
 * settle, starts, batch mark and claim as settle and claim in one transaction, in one round
 * trip instead of five or more.
 */
export async function settleAndClaimAtOnce(
  sql: Sql,
  st: Statements,
  settlements: Settlement[],
  req: ClaimRequest & { leaseFrom: number | null },
): Promise<{ applied: Applied[]; claimed: ClaimedTask[] }> {
  const ss = [...settlements].sort((a, b) => a.taskId - b.taskId);
  const started = req.started ?? [];
  const rows = await sql.rows<(TaskDbRow & { n: number; lease_token: number | string }) & { applied: (number | string)[]; applied_status: TaskStatus[]; inputs: { stage: string; result: string | null }[] | null }>(st.tick, [
    ...reportParams(ss),
    ss.map((s) => lateReportNote(s)),
    started.map((x) => x.taskId),
    started.map((x) => x.token),
    started.map((x) => x.at),
    ...claimParams(req, req.jobVersion ?? null),
  ]);
  const { applied, applied_status: status } = rows[0]!;
  const held = new Map(applied.map((token, i) => [Number(token), status[i]!]));
  const claimed = rows.filter((t) => t.id !== null).map((t) => toClaimedTask(t, Number(t.lease_token), t.worker_id!, t.inputs === null ? {} : inputsByStage(t.inputs)));
  return { applied: appliedOf(settlements, held), claimed };
}
