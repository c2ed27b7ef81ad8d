import { RATE_WINDOW, etaSeconds, tasksPerSecond } from '../../status/busy-rate.js';
import { statSync } from 'node:fs';
import type { BatchRecord, Counts, StageCounts, TaskStore } from '../../store/task-store.js';
import { clusterErrors, type ErrorCluster } from '../error-signature.js';
import { duration, iso, printable } from '../format.js';
import { colors, line, type Io, type OutputFlags } from '../io.js';
import { suggest } from '../suggest.js';
import { withBatch } from '../with-store.js';

export interface StatusFlags extends OutputFlags {
  db?: string;
  batch?: string;
}

/** `splitdance status`: where the batch stands, as one JSON object or a short human report. */
export async function statusCommand(flags: StatusFlags, io: Io): Promise<number> {
  return withBatch(
    flags,
    io,
    async (store, batch, { target }) => {
      const s = await batchStatus(store, batch);
      if (flags.json) {
        line(io.stdout, JSON.stringify(s, null, 2));
        return 0;
      }
      const c = colors(io, flags, 'stdout');
      const out: string[] = [];
      out.push(`batch ${c.bold(printable(s.batch))} (${printable(s.source)})`);
      out.push(
        `${s.succeeded + s.failed + s.cancelled}/${s.total} done: ${c.green(`${s.succeeded} succeeded`)}, ${s.failed ? c.red(`${s.failed} failed`) : '0 failed'}` +
          `${s.cancelled ? `, ${s.cancelled} cancelled` : ''}; ${s.pending} pending, ${s.retrying} retrying, ${s.running} running`,
      );
      const stageWidth = Math.max(0, ...s.stages.map((x) => printable(x.stage).length));
      for (const st of s.stages) {
        out.push(
          `  ${printable(st.stage).padEnd(stageWidth)}  ${st.succeeded + st.failed + st.cancelled}/${st.total} done: ` +
            `${st.succeeded} succeeded, ${st.failed} failed, ${st.cancelled} cancelled; ${st.pending} pending, ${st.retrying} retrying, ${st.running} running`,
        );
      }
      out.push(`store ${s.storeBytes} bytes on disk`);
      if (s.tasksPerSecond) {
        out.push(`rate ${s.tasksPerSecond.toFixed(2)} tasks/s${s.etaSeconds ? `, ETA ${duration(s.etaSeconds * 1000)}` : ''}`);
      }
      if (s.nextRetryAt) out.push(`next retry due ${s.nextRetryAt} (in ${duration(Math.max(0, Date.parse(s.nextRetryAt) - Date.now()))})`);
      if (s.changed) out.push(`${s.changed} succeeded task(s) have changed files since: \`${suggest(target, ['run', '--rerun-changed'], s.source)}\` re-runs them`);
      if (s.clusters.length) {
        out.push('failures by error:');
        for (const cl of s.clusters.slice(0, 10)) out.push(`  [${cl.id}] ${cl.count} × ${printable(cl.error)}   e.g. ${printable(cl.example)}`);
        out.push(`  (retry one group by its [id], e.g.: ${suggest(target, ['retry-failed', '--cluster', s.clusters[0]!.id])})`);
      }
      const retry = `\`${suggest(target, ['retry-failed', '--run'])}\` retries them`;
      out.push(s.done ? (s.failed ? `finished with failures: ${retry}` : 'finished') : `not finished: \`${suggest(target, ['run'], s.source)}\` resumes it`);
      io.stdout.write(`${out.join('\n')}\n`);
      return 0;
    },
    { readonly: true },
  );
}

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
  /** Succeeded tasks whose file changed (size or mtime) since; `run --rerun-changed` re-runs them. */
  changed: number;
  topErrors: { error: string; count: number; example: string; cluster: string }[];
  clusters: ErrorCluster[];
  storeBytes: number;
  /** Counts per stage, for a batch with stages (empty without). */
  stages: StageCounts[];
}

export async function batchStatus(store: TaskStore, batch: BatchRecord): Promise<BatchStatus> {
  const c = await store.counts(batch.id);
  const { firstStartedAt, lastFinishedAt } = await store.activity(batch.id);
  const open = c.pending + c.retrying + c.running;
  const finished = c.succeeded + c.failed + c.cancelled;
  // Over time spent running: LOST and INTERRUPTED attempts end when someone noticed, not when they ran.
  const { attempts: recent, total: attemptCount } = finished > 0 ? await store.batchAttempts(batch.id, RATE_WINDOW) : { attempts: [], total: 0 };
  const ran = recent.filter((a) => a.outcome !== 'LOST' && a.outcome !== 'INTERRUPTED');
  const rate = tasksPerSecond(ran, finished, attemptCount - c.running);
  const due = open > 0 ? await store.nextDueAt(batch.id) : null;
  const clusters = clusterErrors(await store.topErrors(batch.id, 1000));
  return {
    batch: batch.name,
    source: batch.source,
    ...c,
    done: open === 0,
    startedAt: iso(firstStartedAt),
    updatedAt: iso(Math.max(lastFinishedAt ?? 0, batch.updatedAt)),
    tasksPerSecond: rate,
    etaSeconds: etaSeconds(open, rate),
    nextRetryAt: due !== null && due > Date.now() && c.retrying > 0 ? iso(due) : null,
    changed: await store.changedCount(batch.id),
    topErrors: clusters.slice(0, 10).map((cl) => ({ error: cl.error, count: cl.count, example: cl.example, cluster: cl.id })),
    clusters,
    storeBytes: storeSize(store.location),
    stages: hasStages(batch) ? inPipelineOrder(batch, await store.stageCounts(batch.id)) : [],
  };
}

/** Whether the batch's stored job declares stages. */
export function hasStages(batch: BatchRecord): boolean {
  return Array.isArray(batch.job.stages) && batch.job.stages.length > 0;
}

function inPipelineOrder(batch: BatchRecord, counts: StageCounts[]): StageCounts[] {
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
