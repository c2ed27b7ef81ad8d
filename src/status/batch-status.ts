import { statSync } from 'node:fs';
import { EXIT } from '../exit-codes.js';
import type { BatchAttempt, BatchRecord, Counts, ErrorCount, LearnedWork, QueryStore, StageCounts } from '../store/task-store.js';
import { RATE_WINDOW, etaSeconds, tasksPerSecond, type RetriesAhead } from './busy-rate.js';
import { clusterErrors, type ErrorCluster } from './error-signature.js';
import { liveLevels, type LiveLevel } from './adaptive-levels.js';
import { ownerHolds, type OwnerHold } from './owner-state.js';

const iso = (ms: number | null | undefined): string | null => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

/**
 * A batch's facts, computed once for `status`, the HTML report and whatever else shows them;
 * no formatting here.
 */
/** What `status --json` prints: the counts of SPEC §6 and how the batch is doing. */
export interface BatchStatus extends Counts {
  batch: string;
  source: string;
  done: boolean;
  startedAt: string | null;
  updatedAt: string | null;
  tasksPerSecond: number | null;
  etaSeconds: number | null;
  nextRetryAt: string | null;
  /** Succeeded tasks whose declared output was up to date: recorded SUCCESS, nothing ran. */
  upToDate: number;
  /** Succeeded tasks whose file changed (size or mtime) since; `run --rerun-changed` re-runs them. */
  changed: number;
  /** The failure clusters, most frequent first, at most 10: `cluster` is the id `retry-failed --cluster` takes. */
  topErrors: { error: string; count: number; example: string; cluster: string; signature: string }[];
  /** Every cluster (of the first 1000 distinct errors), for the human report; not printed by --json. */
  clusters: ErrorCluster[];
  storeBytes: number;
  /** Counts per stage, for a batch with stages (empty without). */
  stages: StageCounts[];
  /** Who holds its RUNNING tasks: a dead owner's tasks are taken back by the next run; a stopped one keeps them. */
  owners: OwnerHold[];
  /** --adaptive: the level each of its runs and workers keeps running at now (empty without). */
  adaptive: LiveLevel[];
  /** --on-complete, --on-failure: their runs at the batch's ends, the latest first (at most HOOK_RUNS_LISTED). */
  hooks: { hook: string; id: string; runs: number; startedAt: string; endedAt: string | null; exitCode: number | null; signal: string | null; output: string | null }[];
  /**
   * Committed successes whose declared output is not in place: its rename failed (EXDEV,
   * EACCES, EROFS) and the file waits at its temporary path. The batch is not done while any
   * is left; its next run (or one of any batch declaring that output) places them or says why not.
   */
  outputsPending: number;
  /** The first PENDING_OUTPUTS_LISTED of them, by task id: the task's key, its output path, the file waiting. */
  pendingOutputs: { key: string; out: string | null; temp: string }[];
}

/** How many pending outputs `status` lists (it counts them all). */
export const PENDING_OUTPUTS_LISTED = 100;

/** How many hook runs `status --json` lists. */
const HOOK_RUNS_LISTED = 10;

export async function batchStatus(store: QueryStore, batch: BatchRecord): Promise<BatchStatus> {
  const c = await store.counts(batch.id);
  const { firstStartedAt, lastFinishedAt } = await store.activity(batch.id);
  const open = c.pending + c.retrying + c.running + c.queued;
  const finished = c.succeeded + c.failed + c.cancelled;
  const rate = finished > 0 ? rateOf(await store.recentAttempts(batch.id, RATE_WINDOW), finished, c.running + c.queued, longestRetryWaitMs(batch)) : null;
  const due = open > 0 ? await store.nextDueAt(batch.id) : null;
  const now = Date.now();
  const clusters = clusterErrors(await store.topErrors(batch.id, 1000));
  const pending = c.succeeded > 0 ? await store.pendingOutputs(batch.id) : [];
  return {
    batch: batch.name,
    source: batch.source,
    ...c,
    done: open === 0 && pending.length === 0,
    startedAt: iso(firstStartedAt),
    updatedAt: iso(lastUpdateMs(batch, lastFinishedAt)),
    tasksPerSecond: rate,
    etaSeconds: etaSeconds(open, rate, await retriesAhead(store, batch, c.retrying, due, now), await learnedWorkOf(store, batch, open)),
    nextRetryAt: due !== null && due > now && c.retrying > 0 ? iso(due) : null,
    upToDate: c.succeeded > 0 ? await store.upToDateCount(batch.id) : 0,
    changed: await store.changedCount(batch.id),
    topErrors: clusters.slice(0, 10).map((cl) => ({ error: cl.error, count: cl.count, example: cl.example, cluster: cl.id, signature: cl.signature })),
    clusters,
    storeBytes: storeSize(store.location),
    stages: hasStages(batch) ? inPipelineOrder(batch, await store.stageCounts(batch.id)) : [],
    owners: c.running + c.queued > 0 ? ownerHolds(await store.listTasks({ batchId: batch.id, status: 'RUNNING' })) : [],
    adaptive: open > 0 ? await liveLevels(store, batch, now) : [],
    hooks: (await store.hooksOf(batch.id)).slice(0, HOOK_RUNS_LISTED).map((h) => ({
      hook: h.hook,
      id: h.id,
      runs: h.runs,
      startedAt: iso(h.startedAt)!,
      endedAt: iso(h.endedAt),
      exitCode: h.exitCode,
      signal: h.signal,
      output: h.output,
    })),
    outputsPending: pending.length,
    pendingOutputs: pending.slice(0, PENDING_OUTPUTS_LISTED).map((p) => ({ key: p.key, out: p.out, temp: p.temp })),
  };
}

/**
 * The errors of the tasks waiting to retry, clustered like the FAILED ones: a command that
 * fails every attempt shows here long before its retries are spent. Reads at most `limit`
 * retrying tasks.
 */
export async function retryingClusters(store: QueryStore, batch: BatchRecord, limit = 1000): Promise<ErrorCluster[]> {
  const byError = new Map<string, ErrorCount>();
  for (const t of await store.listTasks({ batchId: batch.id, status: 'PENDING', attemptedOnly: true, limit })) {
    const error = t.lastError ?? '(no error recorded)';
    const e = byError.get(error);
    if (e) {
      e.count++;
      if (t.key < e.example) e.example = t.key;
    } else byError.set(error, { error, count: 1, example: t.key });
  }
  return clusterErrors([...byError.values()]);
}

/**
 * The exit code of `status` and `watch` (SPEC §6), so `splitdance status && next-step` works:
 * 0 every task SUCCESS, 1 done with FAILED or CANCELLED tasks, 3 not done yet.
 */
export function verdict(s: { done: boolean; failed: number; cancelled: number }): number {
  if (!s.done) return EXIT.INCOMPLETE;
  return s.failed + s.cancelled > 0 ? EXIT.FAILED : EXIT.OK;
}

/** The batch's last update: its own row's, or its last finished attempt's if later (`updatedAt`, `metrics`). */
export function lastUpdateMs(batch: BatchRecord, lastFinishedAt: number | null): number {
  return Math.max(lastFinishedAt ?? 0, batch.updatedAt);
}

/**
 * Tasks per second of running time, from the most recent attempts (`runningMs`: each run's
 * time from its first attempt to its last, its waits for retries included). LOST and
 * INTERRUPTED attempts end when someone noticed, not when they ran, so they are not running
 * time. When the window holds every attempt of the batch, tasks per attempt is exact; on a
 * bigger batch it is the window's own (its tasks over its attempts), so `status` never counts
 * a million attempts.
 */
function rateOf(recent: BatchAttempt[], finished: number, running: number, maxGapMs: number): number | null {
  const ran = recent.filter((a) => a.outcome !== 'LOST' && a.outcome !== 'INTERRUPTED');
  if (recent.length < RATE_WINDOW) return tasksPerSecond(ran, finished, recent.length - running, maxGapMs);
  const ended = recent.filter((a) => a.outcome !== null);
  return tasksPerSecond(ran, new Set(ended.map((a) => a.key)).size, ended.length, maxGapMs);
}

/**
 * The learned durations of a batch ordered by them (`--order history`), for its ETA; undefined
 * for any other order, or when nothing is open (one pass over the batch's index entries).
 */
export async function learnedWorkOf(store: Pick<QueryStore, 'learnedWork'>, batch: BatchRecord, open: number): Promise<LearnedWork | undefined> {
  return open > 0 && batch.job.order === 'history' ? store.learnedWork(batch.id) : undefined;
}

/**
 * The longest a retry of the batch waits (its `--max-backoff`, or a stage's, spread by its
 * jitter): a run's gap between two attempts longer than this was not spent on the batch.
 */
function longestRetryWaitMs(batch: BatchRecord): number {
  const policies = [batch.job, ...(hasStages(batch) ? (batch.job.stages as Record<string, unknown>[]) : [])];
  let longest = 0;
  for (const p of policies) {
    const max = typeof p.maxBackoffMs === 'number' ? p.maxBackoffMs : 0;
    const jitter = typeof p.jitter === 'number' ? p.jitter : 0;
    longest = Math.max(longest, max * (1 + Math.max(0, jitter)));
  }
  return longest;
}

/** The backoff still ahead of the batch (for the ETA), or undefined when nothing waits for a retry. */
export async function retriesAhead(store: QueryStore, batch: BatchRecord, retrying: number, nextDue: number | null, now: number): Promise<RetriesAhead | undefined> {
  if (retrying === 0) return undefined;
  const last = await store.lastRetryDueAt(batch.id);
  if (last === null) return undefined;
  return { retrying, firstDueInMs: Math.max(0, (nextDue ?? now) - now), lastDueInMs: Math.max(0, last - now) };
}

/** Whether the batch's stored job declares stages. */
export function hasStages(batch: BatchRecord): boolean {
  return Array.isArray(batch.job.stages) && batch.job.stages.length > 0;
}

/** Stage counts in the order the job declares its stages. */
export function inPipelineOrder(batch: BatchRecord, counts: StageCounts[]): StageCounts[] {
  const order = (batch.job.stages as { name: string }[]).map((s) => s.name);
  return [...counts].sort((a, b) => order.indexOf(a.stage) - order.indexOf(b.stage));
}

function storeSize(path: string): number {
  return ['', '-wal', '-shm'].reduce((sum, suffix) => {
    try {
      return sum + statSync(path + suffix).size;
    } catch {
      return sum;
    }
  }, 0);
}
