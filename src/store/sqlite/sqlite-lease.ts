import type { Applied, ClaimRequest, ClaimedTask, LostAttempt, ReleasedTask, Settlement, TaskStatus } from '../records.js';
import { attemptNumber, toClaimedTask, toLost, type ClaimedDbRow, type TaskDbRow } from '../shared/db-rows.js';
import { lostError } from '../shared/lost.js';
import { grant } from '../shared/rate-gate.js';
import type { SqliteConn } from './sqlite-conn.js';
import { lateReportNote } from '../shared/late-report.js';
import { cascade, inputsOf } from './sqlite-stages.js';
import type { Statements } from './statements.js';

/**
 * The lease verbs of a coordinator's tick, each inside the caller's write transaction, each
 * a fixed number of statements whatever the group's size (see lease-statements.ts).
 */

/**
 * Settlements are committed in groups whose JSON lists stay near GROUP_CHARS (a list is one
 * string, and a string has a size limit); a result longer than GROUP_RESULT_MAX is written
 * on its own, bound as a parameter, as it would not gain from a list anyway.
 */
const GROUP_CHARS = 4 * 1024 * 1024;
const GROUP_RESULT_MAX = 256 * 1024;

/**
 * Claims up to one due task per slot, in index order: read the job version and the next
 * attempt id, claim, open the attempt rows, mark the batch started (four statements; a fifth
 * reads the inputs when stage tasks were claimed).
 */
export function claim(st: Statements, req: ClaimRequest): ClaimedTask[] {
  if (req.started?.length) st.markRunning.run({ list: JSON.stringify(req.started.map((s) => [s.taskId, s.token, s.at])) });
  if (req.slots.length === 0) return [];
  const head = st.claimHead.get(req.batchId) as { job_version: number; first: number } | undefined;
  // The claimer's workers loaded another definition's handler: it must not start anything.
  if (!head || (req.jobVersion !== undefined && head.job_version !== req.jobVersion)) return [];
  const rows = req.keyed ? claimKeyed(st, req, head.first, req.keyed) : (st.claimTasks.all(claimParams(req, req.slots, head.first)) as ClaimedRow[]);
  if (rows.length === 0) return [];
  rows.sort((a, b) => a.lease_token - b.lease_token); // slot order
  const list = rows.map((t) => [t.lease_token, t.id, attemptNumber(t), t.worker_id, req.slots[t.lease_token - head.first]!.pid]);
  st.openAttempts.run({ list: JSON.stringify(list), host: req.host, owner: req.owner, now: req.now, jobVersion: head.job_version });
  st.markStarted.run({ batchId: req.batchId, now: req.now });
  const inputs = inputsOf(st, req.batchId, rows);
  return rows.map((t) => toClaimedTask(t, t.lease_token, t.worker_id, inputs.get(t.id) ?? {}));
}

type ClaimedRow = ClaimedDbRow & { worker_id: string; lease_token: number };

/** claimTasks' parameters for `slots`, whose tokens start at `first`. */
function claimParams(req: ClaimRequest, slots: ClaimRequest['slots'], first: number) {
  return {
    batchId: req.batchId,
    now: req.now,
    n: slots.length,
    owner: req.owner,
    expires: req.now + req.leaseMs,
    workers: JSON.stringify(slots.map((s) => s.workerId)),
    queued: JSON.stringify(slots.map((s) => (s.queued ? 1 : 0))),
    first,
  };
}

/**
 * --rate-key: one task a slot, each from a key whose gate is open at `now`, each key's gate
 * moved on as its task is claimed, so the next statement sees it (a key's burst may take
 * two places of one claim; a closed gate none). Slot i's token is `first + i`, as claimTasks'.
 * `now` is the clock as the write lock is held, if later than the request's: a claim that
 * waited for the lock must not move a gate from a time another claimer has passed.
 */
function claimKeyed(st: Statements, asked: ClaimRequest, first: number, { spacingMs, burst }: { spacingMs: number; burst: number }): ClaimedRow[] {
  const req = { ...asked, now: Math.max(asked.now, Date.now()) };
  const rows: ClaimedRow[] = [];
  for (const [i, slot] of req.slots.entries()) {
    const [row] = st.claimKeyed.all(claimParams(req, [slot], first + i)) as (ClaimedRow & { rate_key: string })[];
    if (!row) break;
    const gate = st.keyGate.get({ batchId: req.batchId, key: row.rate_key }) as { next_at: number } | undefined;
    st.moveKeyGate.run({ batchId: req.batchId, key: row.rate_key, next: grant(gate?.next_at ?? null, 1, req.now, spacingMs, burst).next });
    rows.push(row);
  }
  return rows;
}

/** Consecutive runs of settlements whose texts add up to about GROUP_CHARS at most. */
function* bySize(settlements: Settlement[]): Generator<Settlement[]> {
  let group: Settlement[] = [];
  let chars = 0;
  for (const s of settlements) {
    const result = (s.result?.length ?? 0) > GROUP_RESULT_MAX ? 0 : (s.result?.length ?? 0);
    const size = 200 + result + (s.outputTail?.length ?? 0) + (s.logPath?.length ?? 0) + (s.error?.length ?? 0);
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

type Settled = { id: number; batch_id: number; status: TaskStatus; item_key: string | null };

/**
 * Commits the outcomes, each fenced by its token; returns those whose token still held its
 * task, in the order given, with the status each task was left in. Per group of settlements: one statement for the tasks, one for
 * the attempt rows; then one per batch for its last activity, and two for any stage cascade.
 */
export function settle(st: Statements, settlements: Settlement[]): Applied[] {
  if (settlements.length === 0) return [];
  // A token listed again is a repeat of its first settlement: only the first can land.
  const firsts = new Map<number, Settlement>();
  for (const s of settlements) if (!firsts.has(s.token)) firsts.set(s.token, s);
  // A task listed twice (its lease was taken over and it was claimed again): which token
  // holds it must be read first, as the task statement tells only which tasks changed.
  const ids = [...firsts.values()].map((s) => s.taskId);
  const holders = new Set(ids).size < ids.length ? new Set((st.holders.all(JSON.stringify(ids)) as { token: number }[]).map((r) => r.token)) : null;
  const applied = new Map<Settlement, TaskStatus>();
  const finished = new Map<number, number>(); // batch → latest end of an outcome other than INTERRUPTED
  const ended = new Map<number, (string | null)[]>(); // batch → items with a stage task that failed or was cancelled
  for (const group of bySize(settlements)) {
    const tasks = group.flatMap((s) => {
      if (firsts.get(s.token) !== s) return [];
      const big = s.outcome === 'SUCCESS' && (s.result?.length ?? 0) > GROUP_RESULT_MAX;
      if (big) st.putResult.run({ taskId: s.taskId, token: s.token, result: s.result });
      return [[s.taskId, s.token, s.outcome, s.endedAt, s.error, s.retryAt ?? null, big ? null : (s.result ?? null), big ? 1 : 0, s.startedAt ?? null, s.upToDate ? 1 : 0, s.outcome === 'SUCCESS' ? (s.outputTemp ?? null) : null]];
    });
    const changed = new Map((st.settleTasks.all({ list: JSON.stringify(tasks) }) as Settled[]).map((r) => [r.id, r]));
    const attempts = group.map((s) => {
      const row = changed.get(s.taskId);
      const held = row !== undefined && firsts.get(s.token) === s && (holders === null || holders.has(s.token));
      if (held) {
        applied.set(s, row.status);
        if (s.outcome !== 'INTERRUPTED') finished.set(row.batch_id, Math.max(finished.get(row.batch_id) ?? s.endedAt, s.endedAt));
        if (row.item_key !== null && (row.status === 'FAILED' || row.status === 'CANCELLED')) {
          ended.set(row.batch_id, [...(ended.get(row.batch_id) ?? []), row.item_key]);
        }
      }
      // A fenced-off settlement of an attempt recorded LOST still says when it really ended.
      return [s.token, held ? 1 : 0, s.outcome, s.endedAt, s.exitCode, s.signal, s.error, s.durationMs, s.outputTail, s.logPath, s.startedAt ?? null, held ? null : lateReportNote(s)];
    });
    st.settleAttempts.run({ list: JSON.stringify(attempts) });
  }
  for (const [batchId, endedAt] of finished) st.markFinished.run({ batchId, endedAt });
  for (const [batchId, items] of ended) cascade(st, batchId, items, Date.now());
  return settlements.flatMap((s) => {
    const status = applied.get(s);
    return status === undefined ? [] : [{ token: s.token, status }];
  });
}

export function heartbeat(c: SqliteConn, owner: string, leaseExpiresAt: number): number[] {
  return c.write(() => (c.st.heartbeat.all({ owner, expires: leaseExpiresAt }) as { token: number }[]).map((r) => r.token));
}

/** Returns stale RUNNING tasks (expired lease or dead owner, never `self`'s nor a live local owner's) to PENDING, or FAILED when out of attempts. */
export function releaseStale(
  c: SqliteConn,
  batchId: number | null,
  now: number,
  deadOwners: string[],
  self: string,
  liveOwners: string[],
  beforeRelease?: (lost: LostAttempt[]) => void,
): ReleasedTask[] {
  const st = c.st;
  const params = { batchId, now, dead: JSON.stringify(deadOwners), self, live: JSON.stringify(liveOwners) };
  // Read first so the common case (nothing stale) takes no write lock.
  if ((c.read(() => st.staleTasks.all(params)) as TaskDbRow[]).length === 0) return [];
  return c.write(() => {
    const stale = st.staleTasks.all(params) as TaskDbRow[];
    // A stage's inputs: what renders an `{inputs…}` output path, to find the attempt's temporary file.
    const lost = stale.map((t) => toLost(t, inputsOf(st, t.batch_id, [t]).get(t.id) ?? {}));
    beforeRelease?.(lost);
    const released: ReleasedTask[] = [];
    const ended: TaskDbRow[] = [];
    stale.forEach((t, i) => {
      const error = lostError(t.lease_owner, deadOwners);
      const after = st.releaseLost.get({ id: t.id, now, error }) as { status: TaskStatus };
      st.loseAttempt.run({ token: t.lease_token, error });
      released.push({ ...lost[i]!, failed: after.status !== 'PENDING' });
      if (after.status !== 'PENDING') ended.push(t);
    });
    for (const t of ended) cascade(st, t.batch_id, [t.item_key], now);
    return released;
  });
}
