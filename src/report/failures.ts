import { formatMs } from '../job/units.js';
import type { AttemptRow } from '../store/task-store.js';
import { cutError } from '../stored-text.js';
import { esc } from './escape.js';
import type { ClusterDetail, ReportData, TaskDetail } from './report-data.js';

/*
 * Failures, linked within the page (no script): each cluster row links to its list of tasks,
 * each listed key to that task's section with its attempts, errors and output tails. Anchors
 * are built from the cluster's hex id and the task's numeric id, never from a key.
 */

/** An error as the store keeps it now (an older version stored them whole: a 10 MB one stays 4 KiB here). */
const escError = (e: string | null | undefined) => esc(e == null ? e : cutError(e));

const clusterAnchor = (id: string) => `cluster-${id.replace(/[^0-9a-z]/gi, '')}`;
export const taskAnchor = (id: number) => `task-${Math.trunc(id)}`;

function keyLinks(c: ClusterDetail): string {
  const items = c.tasks.map((t) => `<li><a class="task-link" href="#${taskAnchor(t.id)}"><code>${esc(t.key)}</code></a></li>`).join('');
  const more = c.count > c.tasks.length ? `<li class="muted">and ${c.count - c.tasks.length} more (splitdance status shows them all)</li>` : '';
  return `<ul class="keys">${items}${more}</ul>`;
}

/** The clusters, largest first: id (a link to its tasks), size, error, retry command and keys. */
function clustersTable(clusters: ClusterDetail[], retry?: (id: string) => string): string {
  const rows = clusters
    .map(
      (c) =>
        `<tr><td><a class="cluster-link" href="#${clusterAnchor(c.id)}"><code>${esc(c.id)}</code></a></td><td>${c.count}</td><td>${escError(c.error)}${
          retry ? `<div class="muted">retry: <code>${esc(retry(c.id))}</code></div>` : ''
        }${keyLinks(c)}${c.tail ? `<details><summary>output tail</summary><pre>${esc(c.tail)}</pre></details>` : ''}</td></tr>`,
    )
    .join('');
  return `<table><tr><th>cluster</th><th>tasks</th><th>error</th></tr>${rows}</table>`;
}

/** One cluster's tasks: key (a link to the task), attempts, last error. */
function clusterList(c: ClusterDetail, byId: Map<number, TaskDetail>, staged: boolean): string {
  const rows = c.tasks
    .map((t) => byId.get(t.id))
    .filter((d): d is TaskDetail => d !== undefined)
    .map(
      (d) =>
        `<tr><td><a class="task-link" href="#${taskAnchor(d.task.id)}"><code>${esc(d.task.key)}</code></a></td>${staged ? `<td>${esc(d.task.stage)}</td>` : ''}<td>${d.task.attempts}</td><td>${escError(d.task.lastError)}</td></tr>`,
    )
    .join('');
  return `<section class="cluster" id="${clusterAnchor(c.id)}"><h3>Cluster <code>${esc(c.id)}</code>: ${c.count} task(s)</h3><p>${escError(c.error)}</p><table><tr><th>key</th>${staged ? '<th>stage</th>' : ''}<th>attempts</th><th>last error</th></tr>${rows}</table></section>`;
}

function attemptRow(a: AttemptRow): string {
  const took = a.durationMs !== null ? formatMs(a.durationMs) : a.endedAt === null ? (a.outcome === null ? 'running' : 'end unknown') : formatMs(a.endedAt - a.startedAt);
  const exit = a.signal ?? (a.exitCode !== null ? String(a.exitCode) : '-');
  return `<tr><td>#${a.attempt}</td><td>${esc(a.outcome ?? 'RUNNING')}</td><td>${esc(new Date(a.startedAt).toISOString())}</td><td>${esc(took)}</td><td>${esc(a.workerId)}</td><td>${esc(a.host)}</td><td>${esc(exit)}</td><td>${escError(a.error)}</td></tr>`;
}

/** One task's section: where it stands, every attempt, and each attempt's output tail. */
function taskSection(d: TaskDetail, clusterOf: Map<number, string>, staged: boolean): string {
  const t = d.task;
  const cluster = clusterOf.get(t.id);
  const tails = d.attempts
    .filter((a) => a.outputTail)
    .map((a, i, all) => `<details${i === all.length - 1 ? ' open' : ''}><summary>output tail of attempt #${a.attempt}</summary><pre>${esc(a.outputTail)}</pre></details>`)
    .join('');
  return `<section class="task" id="${taskAnchor(t.id)}"><h3><code>${esc(t.key)}</code></h3><p>${esc(t.status)}${staged ? ` · stage ${esc(t.stage)}` : ''} · ${t.attempts} attempt(s)${
    cluster ? ` · cluster <a href="#${clusterAnchor(cluster)}"><code>${esc(cluster)}</code></a>` : ''
  }</p><p class="error">error: <code>${escError(t.lastError ?? '-')}</code></p><table><tr><th>attempt</th><th>outcome</th><th>started</th><th>took</th><th>worker</th><th>host</th><th>exit</th><th>error</th></tr>${d.attempts
    .map(attemptRow)
    .join('')}</table>${tails}</section>`;
}

/** The failures part of the report: clusters, each cluster's tasks, and each of those tasks. */
export function failuresHtml(d: ReportData, retry?: (id: string) => string): string {
  if (d.clusters.length === 0) return '<h2>Failures by error</h2><p class="empty">No failed tasks.</p>';
  const staged = d.status.stages.length > 0;
  const byId = new Map(d.details.map((t) => [t.task.id, t]));
  const clusterOf = new Map(d.clusters.flatMap((c) => c.tasks.map((t) => [t.id, c.id] as const)));
  const hint = retry ? '' : '<p class="muted">Retry one cluster: <code>splitdance retry-failed --cluster ID --run</code></p>';
  return `<h2>Failures by error</h2>${clustersTable(d.clusters, retry)}${hint}
<h2>Failed tasks by cluster</h2>${d.clusters.map((c) => clusterList(c, byId, staged)).join('\n')}
<h2>Failed tasks</h2>${d.details.map((t) => taskSection(t, clusterOf, staged)).join('\n')}`;
}
