import { formatMs } from '../job/units.js';
import type { BatchAttempt } from '../store/task-store.js';
import { inUnit, unitFor } from './axis.js';
import { esc } from './escape.js';

export const OUTCOME_COLORS: Record<string, string> = {
  SUCCESS: '#2e9d5b',
  FAILED: '#d64545',
  TIMEOUT: '#e08a1e',
  CRASHED: '#8e44ad',
  LOST: '#7f8c8d',
  INTERRUPTED: '#c9b037',
  BUSY: '#5dade2',
  RUNNING: '#3b82f6',
};

const LANE = 18;
const LABEL = 150;
const WIDTH = 1100;

/** A Gantt chart: one lane per worker, one bar per attempt, coloured by outcome. */
export function ganttSvg(attempts: BatchAttempt[], now: number): string {
  if (attempts.length === 0) return '<p class="empty">No attempts yet.</p>';
  const lanes = [...new Set(attempts.map((a) => a.workerId))];
  const t0 = Math.min(...attempts.map((a) => a.startedAt));
  const t1 = Math.max(...attempts.map((a) => drawnEnd(a, now)), t0 + 1);
  const plot = WIDTH - LABEL - 10;
  const x = (t: number) => LABEL + ((t - t0) / (t1 - t0)) * plot;
  const height = lanes.length * LANE + 30;
  const bars = attempts.map((a) => {
    const outcome = a.outcome ?? 'RUNNING';
    const end = drawnEnd(a, now);
    const unknown = a.endedAt === null && a.outcome !== null;
    const y = lanes.indexOf(a.workerId) * LANE + 4;
    const w = Math.max(1, x(end) - x(a.startedAt));
    const took = unknown ? 'end unknown' : formatMs(end - a.startedAt);
    const title = `${a.key} #${a.attempt} ${outcome} ${took} (worker ${a.workerId}, pid ${a.pid ?? '-'})${a.error ? `: ${a.error}` : ''}`;
    return `<rect class="bar" data-outcome="${outcome}"${unknown ? ' data-end="unknown"' : ''} x="${x(a.startedAt).toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${LANE - 6}" fill="${OUTCOME_COLORS[outcome]}"><title>${esc(title)}</title></rect>`;
  });
  const labels = lanes.map((l, i) => `<text class="lane" x="4" y="${i * LANE + 15}">${esc(l)}</text>`);
  // The end ticks' labels hang inwards from their line, so neither leaves the picture.
  const anchors = ['start', 'middle', 'middle', 'middle', 'end'];
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f, i) => {
    const tx = LABEL + f * plot;
    return `<line x1="${tx}" x2="${tx}" y1="0" y2="${lanes.length * LANE}" class="grid"/><text class="tick" x="${tx}" y="${lanes.length * LANE + 16}" text-anchor="${anchors[i]}">${esc(tick((t1 - t0) * f, t1 - t0))}</text>`;
  });
  return `<svg class="gantt" role="img" aria-label="attempts per worker over time" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}">${ticks.join('')}${labels.join('')}${bars.join('')}</svg>`;
}

/**
 * Where an attempt's bar ends: its end, now while it runs, and its start for a LOST attempt
 * whose end is unknown (a marker, not a bar reaching the takeover or now, neither its end).
 */
function drawnEnd(a: BatchAttempt, now: number): number {
  return a.endedAt ?? (a.outcome === null ? now : a.startedAt);
}

/**
 * Axis labels since the first attempt, precise enough to tell the ticks apart: under a minute
 * in one unit (`1.5 s`, `250 ms`); from a minute to 100 hours as a clock (`0:42`, `1:30`,
 * `2:05:00`: a quarter of the span is at least 15 s, so whole seconds tell them apart, where
 * `+0.71 min` had to be worked out); beyond, in one unit (`+13.8 h` never reads twice).
 */
export function tick(ms: number, span: number): string {
  if (span >= 60_000 && span < 100 * 3_600_000) return clock(ms);
  const unit = unitFor(span);
  return `${inUnit(ms, unit)} ${unit.name}`;
}

/** `m:ss`, or `h:mm:ss` from an hour. */
function clock(ms: number): string {
  const total = Math.round(ms / 1000);
  const [h, m, sec] = [Math.floor(total / 3600), Math.floor((total % 3600) / 60), total % 60];
  const ss = String(sec).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}
