/** The progress bar's line on a terminal: what SPEC §7 asks it to show, in the width there is. */

export interface BarFacts {
  done: number;
  total: number;
  /** Tasks per second, as shown (e.g. `12.3`). */
  rate: string;
  /** As shown (`4m 10s`, `?`). */
  eta: string;
  running: number;
  queued: number;
  retrying: number;
  failed: number;
}

const SEP = ' · ';
const WIDEST_BAR = 30;
const NARROWEST_BAR = 10;

/**
 * The bar's line for a terminal `columns` wide, at most `columns - 1` characters (the last
 * column is never written, so the cursor never waits to wrap and the redraw stays on its
 * row). Everything fits at 80 columns; on a narrower terminal the bar shrinks, the labels
 * shorten, then the bar goes, then the counts that are 0 (queued, retrying), the rate, the ETA,
 * and so on, down to `done/total` alone. Recomputed on every redraw, so a resize takes effect.
 */
export function barLine(f: BarFacts, columns: number): string {
  const room = Math.max(1, columns - 1);
  const counts = `${f.done}/${f.total}`;
  const rate = `${f.rate}/s`;
  const eta = `ETA ${f.eta}`;
  const long = [`${f.running} running`, `${f.queued} queued`, `${f.retrying} retrying`, `${f.failed} failed`];
  const short = [`${f.running} run`, `${f.queued} queue`, `${f.retrying} retry`, `${f.failed} fail`];
  const [run, queue, retry, fail] = short;
  const nonZero = (n: number, text: string) => (n > 0 ? [text] : []);
  const texts = [
    [counts, rate, eta, ...long],
    [counts, rate, eta, ...short],
    [counts, rate, eta, run!, ...nonZero(f.queued, queue!), ...nonZero(f.retrying, retry!), fail!],
    [counts, eta, run!, ...nonZero(f.queued, queue!), ...nonZero(f.retrying, retry!), fail!],
    [counts, eta, run!, fail!],
    [counts, run!, fail!],
    [counts, fail!],
    [counts],
  ].map((parts) => parts.join(SEP));
  // With a bar first, while one of at least NARROWEST_BAR fits beside the whole text.
  for (const text of texts.slice(0, 3)) {
    const size = Math.min(WIDEST_BAR, room - text.length - 1);
    if (size >= NARROWEST_BAR) return `${bar(f.done, f.total, size)} ${text}`;
  }
  for (const text of texts) if (text.length <= room) return text;
  return texts[texts.length - 1]!.slice(0, room);
}

/** `size` cells, filled in proportion to done/total (cli-progress's shades_classic look). */
function bar(done: number, total: number, size: number): string {
  const filled = total > 0 ? Math.min(size, Math.round((done / total) * size)) : 0;
  return '\u2588'.repeat(filled) + '\u2591'.repeat(size - filled);
}
