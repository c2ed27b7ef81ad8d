import { batchStatus, type BatchStatus } from '../status/batch-status.js';
import { clusterId, errorSignature } from '../status/error-signature.js';
import type { BatchAttempt, BatchRecord, QueryStore, TaskRow } from '../store/task-store.js';

/** At most this many attempts are drawn; a bigger batch shows its most recent ones. */
export const MAX_BARS = 5000;

export interface ClusterDetail {
  id: string;
  count: number;
  error: string;
  keys: string[];
  tail: string | null;
}

export interface ReportData {
  status: BatchStatus;
  attempts: BatchAttempt[];
  attemptsTotal: number;
  slowest: TaskRow[];
  clusters: ClusterDetail[];
  generatedAt: number;
}

/** Everything the report shows, read from the store in one place. */
export async function loadReport(store: QueryStore, batch: BatchRecord): Promise<ReportData> {
  const status = await batchStatus(store, batch);
  const { attempts, total } = await store.batchAttempts(batch.id, MAX_BARS);
  const slowest = await store.listTasks({ batchId: batch.id, order: 'slowest', limit: 15 });
  const clusters: ClusterDetail[] = [];
  for (const c of status.clusters.slice(0, 10)) {
    const tasks = await store.listTasks({
      batchId: batch.id,
      status: 'FAILED',
      errorMatches: (e) => e !== null && clusterId(errorSignature(e)) === c.id,
      limit: 20,
    });
    const last = tasks[0] ? (await store.attemptsOf(tasks[0].id)).at(-1) : undefined;
    clusters.push({ id: c.id, count: c.count, error: c.error, keys: tasks.map((t) => t.key), tail: last?.outputTail ?? null });
  }
  return { status, attempts, attemptsTotal: total, slowest, clusters, generatedAt: Date.now() };
}
