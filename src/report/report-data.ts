import { batchStatus, type BatchStatus } from '../status/batch-status.js';
import { clusterId, errorSignature } from '../status/error-signature.js';
import type { AttemptRow, BatchAttempt, BatchRecord, QueryStore, TaskRow } from '../store/task-store.js';

/** At most this many attempts are drawn; a bigger batch shows its most recent ones. */
const MAX_BARS = 5000;

export interface ClusterDetail {
  id: string;
  count: number;
  error: string;
  /** The cluster's tasks the report details (at most CLUSTER_TASKS), each linked to its section. */
  tasks: { id: number; key: string }[];
  tail: string | null;
}

/** A failed task as the report details it: its row and every attempt, with errors and output tails. */
export interface TaskDetail {
  task: TaskRow;
  attempts: AttemptRow[];
}

/** Tasks listed (and detailed) per failure cluster; the rest are one `status`/`show` away. */
const CLUSTER_TASKS = 20;

export interface ReportData {
  status: BatchStatus;
  attempts: BatchAttempt[];
  attemptsTotal: number;
  slowest: TaskRow[];
  clusters: ClusterDetail[];
  /** The tasks the clusters list, in cluster order. */
  details: TaskDetail[];
  generatedAt: number;
}

/** Everything the report shows, read from the store in one place. */
export async function loadReport(store: QueryStore, batch: BatchRecord): Promise<ReportData> {
  const status = await batchStatus(store, batch);
  const { attempts, total } = await store.batchAttempts(batch.id, MAX_BARS);
  const slowest = await store.listTasks({ batchId: batch.id, order: 'slowest', limit: 15 });
  const clusters: ClusterDetail[] = [];
  const details: TaskDetail[] = [];
  for (const c of status.clusters.slice(0, 10)) {
    const tasks = await store.listTasks({
      batchId: batch.id,
      status: 'FAILED',
      errorMatches: (e) => e !== null && clusterId(errorSignature(e)) === c.id,
      limit: CLUSTER_TASKS,
    });
    for (const task of tasks) details.push({ task, attempts: await store.attemptsOf(task.id) });
    const last = tasks[0] ? details.find((d) => d.task.id === tasks[0]!.id)?.attempts.at(-1) : undefined;
    clusters.push({ id: c.id, count: c.count, error: c.error, tasks: tasks.map((t) => ({ id: t.id, key: t.key })), tail: last?.outputTail ?? null });
  }
  return { status, attempts, attemptsTotal: total, slowest, clusters, details, generatedAt: Date.now() };
}
