import type { ChalkInstance } from 'chalk';
import type { LiveFacts } from '../status/live-view.js';
import { describeLevels } from '../status/adaptive-levels.js';
import { printable } from './format.js';

/** How `watch` shows its facts: a frame for a terminal, one plain line for a pipe or a file. */

/** Elapsed time as a clock reads: `9.4s`, `3:07`, `1:02:09`. */
function clock(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${(ms / 1000).toFixed(1)}s`;
  const two = (n: number) => String(n).padStart(2, '0');
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h}:${two(m)}:${two(s % 60)}` : `${m}:${two(s % 60)}`;
}

const rateText = (f: LiveFacts): string =>
  f.ratePerSecond === null ? 'rate -' : `${f.ratePerSecond.toFixed(f.ratePerSecond < 10 ? 2 : 1)} tasks/s over the last ${clock(f.rateSpanMs)}`;
/** `4 tasks held by a dead coordinator (pid 81234 on this machine)` for each stopped or dead owner, and what comes next. */
const stranded = (f: LiveFacts): { text: string; next: string }[] =>
  f.strandedOwners.map((o) => ({
    text: `${o.tasks} task${o.tasks === 1 ? '' : 's'} held by a ${o.state} coordinator (pid ${o.pid} on this machine)`,
    next: o.state === 'dead' ? 'the next run or worker takes them back' : `they wait for it: kill -CONT ${o.pid}`,
  }));
const etaText = (f: LiveFacts): string => (f.done ? 'done' : f.etaSeconds === null ? 'ETA -' : `ETA ${clock(f.etaSeconds * 1000)}`);

/** One line per interval, no control characters: for logs, pipes and cron mail. */
export function plainLine(f: LiveFacts): string {
  const stages = f.stages.map((s) => `${printable(s.stage)} ${s.succeeded + s.failed + s.cancelled}/${s.total}`).join(' ');
  const levels = f.adaptive.length ? `; --adaptive ${f.adaptive.map((l) => `${l.level}/${l.max}`).join(', ')}` : '';
  return (
    `${new Date(f.at).toISOString()} batch ${printable(f.batch)}: ${f.finished}/${f.total} done, ${f.succeeded} succeeded, ${f.failed} failed, ` +
    `${f.cancelled} cancelled, ${f.pending} pending, ${f.retrying} retrying, ${f.running} running, ${f.queued} queued${stages ? ` [${stages}]` : ''}${levels}; ${rateText(f)}, ${etaText(f)}${stranded(f).map((s) => `; ${s.text}`).join('')}`
  );
}

/** The live view's lines (coloured with `c`, not yet cut to the terminal's width). */
export function frameLines(f: LiveFacts, c: ChalkInstance): string[] {
  const out: string[] = [];
  out.push(`${c.bold(`batch ${printable(f.batch)}`)} (${printable(f.source)})   ${new Date(f.at).toISOString()}`);
  out.push(
    `${f.finished}/${f.total} done: ${c.green(`${f.succeeded} succeeded`)}, ${f.failed ? c.red(`${f.failed} failed`) : '0 failed'}, ${f.cancelled} cancelled`,
  );
  out.push(`${f.open} to go: ${f.pending} pending, ${f.retrying ? c.yellow(`${f.retrying} retrying`) : '0 retrying'}, ${c.cyan(`${f.running} running`)}, ${f.queued} queued`);
  const width = Math.max(0, ...f.stages.map((s) => printable(s.stage).length));
  for (const s of f.stages) {
    out.push(
      `  ${printable(s.stage).padEnd(width)}  ${s.succeeded + s.failed + s.cancelled}/${s.total} done: ${s.succeeded} succeeded, ${s.failed} failed, ` +
        `${s.cancelled} cancelled; ${s.pending} pending, ${s.retrying} retrying, ${s.running} running, ${s.queued} queued`,
    );
  }
  out.push(`${rateText(f)}, ${etaText(f)}`);
  const levels = describeLevels(f.adaptive);
  if (levels) out.push(levels);
  out.push('');
  out.push(c.bold(`running (${f.running})${f.queued ? `, ${f.queued} queued behind them` : ''}`));
  const tasks = f.runningTasks.map((t) => ({ ...t, worker: printable(t.workerId ?? '-'), where: printable(t.host || '-'), time: clock(t.elapsedMs) }));
  const w = (k: 'worker' | 'where' | 'time') => Math.max(0, ...tasks.map((t) => t[k].length));
  for (const t of tasks) out.push(`  ${t.worker.padEnd(w('worker'))}  ${t.where.padEnd(w('where'))}  ${t.time.padStart(w('time'))}  ${printable(t.key)}`);
  if (f.moreRunning > 0) out.push(c.dim(`  … and ${f.moreRunning} more`));
  for (const s of stranded(f)) out.push(c.yellow(`  ${s.text}: ${s.next}`));
  if (f.failures.length > 0) {
    out.push('');
    out.push(c.bold('latest failures'));
    for (const x of f.failures) {
      // ISO UTC, as every time splitdance prints (a local clock time is ambiguous across machines).
      const when = x.at ? new Date(x.at).toISOString() : '-';
      out.push(`  ${when}  ${printable(x.key)} #${x.attempt} ${c.red(x.outcome)}: ${printable(x.error ?? '(no error recorded)')}`);
    }
  }
  return out;
}

const SGR = /\x1b\[[0-9;]*m/y; // eslint-disable-line no-control-regex

/** A line cut to `width` visible characters (colour sequences do not count), so it never wraps. */
export function fit(text: string, width: number): string {
  let shown = 0;
  let i = 0;
  while (i < text.length) {
    SGR.lastIndex = i;
    const m = SGR.exec(text);
    if (m) {
      i += m[0].length;
      continue;
    }
    if (shown === width) return `${text.slice(0, i)}\x1b[0m`;
    const cp = text.codePointAt(i)!;
    i += cp > 0xffff ? 2 : 1;
    shown++;
  }
  return text;
}
