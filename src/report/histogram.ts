import type { BatchAttempt } from '../store/task-store.js';
import { durationRange, niceCount, roundDurationStep, unitFor } from './axis.js';
import { esc } from './escape.js';

/** At most this many bars; the bucket width is the round duration that fits the range in them. */
const MAX_BUCKETS = 20;
const PLOT_H = 160;
const PLOT_W = 760;
const MAX_BAR_W = 72;
/** An 11px label's width per character, generous, to size margins without measuring text. */
const CHAR_W = 6.6;
const SLANT = 40;

export interface Bucket {
  from: number;
  to: number;
  count: number;
}

/** Finished attempts' durations in round buckets (`0–100 ms`, `100–200 ms`…), none left empty at either end. */
export function durationBuckets(durations: number[]): Bucket[] {
  const lo = Math.min(...durations);
  const hi = Math.max(...durations);
  // step ≥ range/(MAX-1): the first edge sits up to one step below lo, so MAX buckets still reach hi.
  const step = roundDurationStep((hi - lo) / (MAX_BUCKETS - 1));
  const start = Math.floor(lo / step) * step;
  const n = Math.min(MAX_BUCKETS, Math.floor((hi - start) / step) + 1);
  const buckets = Array.from({ length: n }, (_, i) => ({ from: start + i * step, to: start + (i + 1) * step, count: 0 }));
  for (const d of durations) buckets[Math.min(n - 1, Math.floor((d - start) / step))]!.count++;
  return buckets;
}

/** A histogram of finished attempts' durations: a count axis on the left, each bar's range below it. */
export function histogramSvg(attempts: BatchAttempt[]): string {
  const durations = attempts.filter((a) => a.durationMs !== null).map((a) => a.durationMs!);
  if (durations.length === 0) return '<p class="empty">No finished attempts yet.</p>';
  const buckets = durationBuckets(durations);
  const unit = unitFor(buckets.at(-1)!.to, buckets[0]!.to - buckets[0]!.from);
  const labels = buckets.map((b) => durationRange(b.from, b.to, unit));
  const bw = Math.min(MAX_BAR_W, PLOT_W / buckets.length);
  const longest = Math.max(...labels.map((l) => l.length)) * CHAR_W;
  // Labels wider than their bar are slanted; the margins then hold their whole slanted extent.
  const slanted = longest > bw - 4;
  const rad = (SLANT * Math.PI) / 180;
  const countW = String(Math.max(...buckets.map((b) => b.count))).length * CHAR_W;
  const left = Math.ceil(Math.max(64, countW + 16, slanted ? longest * Math.cos(rad) - bw / 2 + 8 : 0));
  const below = Math.ceil((slanted ? longest * Math.sin(rad) + 11 : 14) + 34);
  const top = 22;
  const width = Math.ceil(left + bw * buckets.length + 16);
  const height = top + PLOT_H + below;
  const base = top + PLOT_H;

  const peak = Math.max(...buckets.map((b) => b.count));
  const yStep = niceCount(peak / 5);
  const yMax = Math.ceil(peak / yStep) * yStep;
  const y = (n: number) => base - (n / yMax) * PLOT_H;
  const yTicks: string[] = [];
  for (let n = 0; n <= yMax; n += yStep) {
    yTicks.push(
      `<line class="grid" x1="${left}" x2="${width - 16}" y1="${y(n).toFixed(1)}" y2="${y(n).toFixed(1)}"/><text class="tick count" x="${left - 6}" y="${(y(n) + 4).toFixed(1)}" text-anchor="end">${n}</text>`,
    );
  }
  const bars = buckets.map((b, i) => {
    const x = left + i * bw;
    const cx = (x + bw / 2).toFixed(1);
    const ly = base + 14;
    const label = slanted
      ? `<text class="tick bucket" x="${cx}" y="${ly}" text-anchor="end" transform="rotate(-${SLANT} ${cx} ${ly})">${esc(labels[i])}</text>`
      : `<text class="tick bucket" x="${cx}" y="${ly}" text-anchor="middle">${esc(labels[i])}</text>`;
    // A bucket of a few among thousands still shows: a sliver, not nothing.
    const h = b.count === 0 ? 0 : Math.max(1.5, (b.count / yMax) * PLOT_H);
    return `<rect class="hist" data-count="${b.count}" x="${(x + 2).toFixed(1)}" y="${(base - h).toFixed(1)}" width="${(bw - 4).toFixed(1)}" height="${h.toFixed(1)}"><title>${b.count} attempt(s) of ${esc(labels[i])}</title></rect>${label}`;
  });
  const axes = `<line class="axis" x1="${left}" x2="${left}" y1="${top}" y2="${base}"/><line class="axis" x1="${left}" x2="${width - 16}" y1="${base}" y2="${base}"/>`;
  const titles = `<text class="axis-title" x="${left - 6}" y="12" text-anchor="end">attempts</text><text class="axis-title" x="${(left + (width - 16)) / 2}" y="${height - 6}" text-anchor="middle">duration</text>`;
  return `<svg class="histogram" role="img" aria-label="duration histogram" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">${yTicks.join('')}${bars.join('')}${axes}${titles}</svg>`;
}
