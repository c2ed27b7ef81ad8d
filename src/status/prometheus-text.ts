import { Counter, Gauge, Registry, type Metric } from 'prom-client';
import { OUTCOMES, TASK_STATUSES, type Counts, type TaskStatus } from '../store/task-store.js';
import type { BatchMetrics } from './batch-metrics.js';

/**
 * Batches' facts in the Prometheus text exposition format, for `metrics` and for the file
 * `run --metrics-file` keeps (node_exporter's textfile collector). prom-client's registry
 * writes it, so HELP, TYPE and the escaping of label values (a batch may be called
 * anything) are the library's.
 */
export async function prometheusText(batches: BatchMetrics[]): Promise<string> {
  const registry = new Registry();
  const registers = [registry];
  const tasks = new Gauge({ name: 'splitdance_tasks', help: 'Tasks of the batch by status (PENDING includes the retrying ones).', labelNames: ['batch', 'status'], registers });
  const retrying = new Gauge({ name: 'splitdance_tasks_retrying', help: 'PENDING tasks that have been attempted before: waiting for a retry.', labelNames: ['batch'], registers });
  const upToDate = new Gauge({ name: 'splitdance_tasks_up_to_date', help: 'SUCCESS tasks whose declared output was up to date: nothing ran.', labelNames: ['batch'], registers });
  const attempts = new Counter({ name: 'splitdance_attempts_total', help: 'Ended attempts of the batch by outcome.', labelNames: ['batch', 'outcome'], registers });
  const updated = new Gauge({ name: 'splitdance_batch_last_update_timestamp_seconds', help: "The batch's last update (its last finished attempt or change), unix time.", labelNames: ['batch'], registers });
  const done = new Gauge({ name: 'splitdance_batch_done', help: '1 when nothing of the batch is PENDING or RUNNING, else 0.', labelNames: ['batch'], registers });
  for (const m of batches) {
    const batch = m.batch;
    for (const status of TASK_STATUSES) tasks.set({ batch, status }, byStatus(m.counts, status));
    retrying.set({ batch }, m.counts.retrying);
    upToDate.set({ batch }, m.upToDate);
    for (const outcome of OUTCOMES) attempts.inc({ batch, outcome }, m.attempts.outcomes[outcome]);
    updated.set({ batch }, m.updatedAtMs / 1000);
    done.set({ batch }, m.done ? 1 : 0);
  }
  registry.registerMetric(durationHistogram(batches));
  return registry.metrics();
}

function byStatus(c: Counts, status: TaskStatus): number {
  switch (status) {
    case 'PENDING':
      return c.pending + c.retrying;
    case 'RUNNING':
      return c.running + c.queued; // the task status: queued attempts are RUNNING tasks
    case 'SUCCESS':
      return c.succeeded;
    case 'FAILED':
      return c.failed;
    case 'CANCELLED':
      return c.cancelled;
  }
}

/**
 * prom-client's Histogram only observes values one by one; the buckets here are already
 * counted (by the store, or by the run), so they are handed to the registry as a metric's
 * samples, which it formats and escapes like any other.
 */
function durationHistogram(batches: BatchMetrics[]): Metric {
  const name = 'splitdance_attempt_duration_seconds';
  const help = 'Durations of ended attempts that recorded one (a LOST attempt has none).';
  const values = batches.flatMap(({ batch, attempts: a }) => [
    ...a.boundsMs.map((b, i) => ({ metricName: `${name}_bucket`, labels: { batch, le: b / 1000 }, value: a.buckets[i]! })),
    { metricName: `${name}_bucket`, labels: { batch, le: '+Inf' }, value: a.count },
    { metricName: `${name}_sum`, labels: { batch }, value: a.sumMs / 1000 },
    { metricName: `${name}_count`, labels: { batch }, value: a.count },
  ]);
  return { name, help, type: 'histogram', get: async () => ({ name, help, type: 'histogram', values, aggregator: 'sum' }) } as unknown as Metric;
}
