import { formatMs } from '../job/units.js';
import { ganttSvg, OUTCOME_COLORS } from './charts.js';
import { esc } from './escape.js';
import { failuresHtml, taskAnchor } from './failures.js';
import { histogramSvg } from './histogram.js';
import type { ReportData } from './report-data.js';

const CSS = `
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1f2328;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.muted{color:#666} .cards{display:flex;gap:12px;flex-wrap:wrap;margin:14px 0}
.card{border:1px solid #ddd;border-radius:8px;padding:8px 14px;min-width:90px} .card b{display:block;font-size:20px}
table{border-collapse:collapse;font-size:13px} td,th{border-bottom:1px solid #eee;padding:4px 10px;text-align:left;vertical-align:top}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px} pre{background:#f6f8fa;padding:8px;max-width:1000px;overflow:auto;white-space:pre-wrap}
.legend span{display:inline-block;margin-right:14px} .legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px;border-radius:2px}
svg text{font-size:11px;fill:#444} .grid{stroke:#eee} .hist{fill:#5b8def} .empty{color:#888}
.scroll{overflow-x:auto} .axis{stroke:#888} .axis-title{fill:#666}
h3{font-size:15px;margin:18px 0 6px} h3 code{font-size:14px} ul.keys{margin:6px 0;padding-left:18px} section.task,section.cluster{padding:2px 8px;border-left:3px solid transparent}
:target{border-left-color:#f0b429 !important;background:#fffbe6} .error code{color:#b42318}`;

/** Per-stage counts, for a batch with stages. */
function stagesTable(s: ReportData['status']): string {
  if (s.stages.length === 0) return '';
  const rows = s.stages
    .map((st) => `<tr><td><code>${esc(st.stage)}</code></td><td>${st.total}</td><td>${st.succeeded}</td><td>${st.failed}</td><td>${st.cancelled}</td><td>${st.pending + st.retrying + st.running + st.queued}</td></tr>`)
    .join('');
  return `<h2>Stages</h2><table><tr><th>stage</th><th>tasks</th><th>succeeded</th><th>failed</th><th>cancelled</th><th>unfinished</th></tr>${rows}</table>`;
}

/** What the report suggests running; built by the caller, which knows the store and batch the user named. */
export interface ReportHints {
  /** The shell command that retries one failure cluster. */
  retryCluster?: (id: string) => string;
}

/** The whole report as one self-contained HTML file: inline CSS and SVG, no script, no network. */
export function renderReport(d: ReportData, hints: ReportHints = {}): string {
  const s = d.status;
  const card = (label: string, value: unknown) => `<div class="card"><b>${esc(value)}</b>${esc(label)}</div>`;
  const legend = Object.entries(OUTCOME_COLORS)
    .map(([k, c]) => `<span><i style="background:${c}"></i>${k}</span>`)
    .join('');
  const cut = d.attemptsTotal > d.attempts.length ? `<p class="muted">Showing the ${d.attempts.length} most recent of ${d.attemptsTotal} attempts.</p>` : '';
  const staged = s.stages.length > 0;
  // A slow task that failed links to its section below, when the failures list it.
  const detailed = new Set(d.details.map((x) => x.task.id));
  const slowest = d.slowest
    .map(
      (t) =>
        `<tr><td>${detailed.has(t.id) ? `<a class="task-link" href="#${taskAnchor(t.id)}"><code>${esc(t.key)}</code></a>` : `<code>${esc(t.key)}</code>`}</td>${staged ? `<td>${esc(t.stage)}</td>` : ''}<td>${esc(formatMs((t.finishedAt ?? 0) - (t.startedAt ?? 0)))}</td><td>${esc(t.status)}</td><td>${t.attempts}</td></tr>`,
    )
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>splitdance report: ${esc(s.batch)}</title><style>${CSS}</style></head>
<body>
<h1>Batch ${esc(s.batch)}</h1>
<div class="muted">source ${esc(s.source)} · generated ${esc(new Date(d.generatedAt).toISOString())}${s.startedAt ? ` · started ${esc(s.startedAt)}` : ''}</div>
<div class="cards">${card('tasks', s.total)}${card('succeeded', s.succeeded)}${s.upToDate ? card('up to date (not run)', s.upToDate) : ''}${card('failed', s.failed)}${s.cancelled ? card('cancelled', s.cancelled) : ''}${card('retrying', s.retrying)}${card('pending', s.pending)}${card('running', s.running)}${s.queued ? card('queued', s.queued) : ''}${card('tasks/s', s.tasksPerSecond ? s.tasksPerSecond.toFixed(2) : '-')}${card(s.done ? 'finished' : 'ETA', s.done ? '✓' : s.etaSeconds !== null ? formatMs(s.etaSeconds * 1000) : '?')}</div>
<h2>Timeline</h2><div class="legend">${legend}</div>${cut}<div class="scroll">${ganttSvg(d.attempts, d.generatedAt)}</div>
<h2>Attempt durations</h2>${histogramSvg(d.attempts)}
${stagesTable(s)}
<h2>Slowest tasks</h2>${slowest ? `<table><tr><th>key</th>${staged ? '<th>stage</th>' : ''}<th>last attempt</th><th>status</th><th>attempts</th></tr>${slowest}</table>` : '<p class="empty">None finished yet.</p>'}
${failuresHtml(d, hints.retryCluster)}
</body></html>
`;
}
