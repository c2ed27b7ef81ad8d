// bench/results.md: one markdown table, the machine's rates first, a verdict for every goal.
import { availableParallelism } from 'node:os';
import { verdicts } from './verdict.mjs';

const us = (x) => `${Math.round(x)} µs`;

/** The machine's rates, as the README quotes them. */
export const machineLine = (m) =>
  `This machine starts processes at: xargs -P2 -n1 true ${m.xargs.toFixed(0)} tasks/s, GNU parallel -j2 --joblog ${m.parallel.toFixed(0)} tasks/s.`;

/** The baseline an own cost is beyond: its own name (`base`), or the row's at that many slots. */
const baseOf = (r, o) => o.base ?? `${r.ownBase}${r.ownBase === 'xargs' ? ` -P${o.slots}` : `, ${o.slots} worker${o.slots > 1 ? 's' : ''}`}`;

/** "-j 1: wall 310 µs, CPU 420 µs (beyond xargs -P1)", one line per slot count. */
const ownCell = (r) => (r.own ? r.own.map((o) => `-j ${o.slots}: wall ${us(o.wall)}, CPU ${us(o.cpu)} (beyond ${baseOf(r, o)})`).join('<br>') : '—');

export function table({ rows, machine, runs, size }) {
  const lines = [
    `# splitdance benchmarks`,
    '',
    `${availableParallelism()} cores, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}; medians of ${runs} run(s), the tools of a benchmark interleaved${size === 'full' ? '' : ` (BENCH_SIZE=${size})`}.`,
    '',
    machineLine(machine),
    '',
    "Own cost per task: splitdance's time per task and slot, and its CPU (of all its processes) per task, beyond the baseline's at the same number of slots. Where processes start slowly a ratio hides it; this figure shows it. Verdicts are this run's figures on this machine.",
    '',
    '| benchmark | workload | results | ratio (-j 2) | own cost per task | goal | on this machine |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    `| machine | ${machine.tasks} × true, 2 at a time | xargs -P2 -n1 true: ${machine.xargs.toFixed(0)}/s<br>parallel -j2 --joblog true: ${machine.parallel.toFixed(0)}/s | — | — | — | — |`,
  ];
  for (const r of rows) {
    const results = r.entries.map((e) => `${e.name}: ${e.rate.toFixed(0)}/s${e.note ? ` (${e.note})` : ''}`).join('<br>');
    lines.push(`| ${r.benchmark} | ${r.workload} | ${results} | ${r.ratio ?? '—'} | ${ownCell(r)} | ${r.goals.map((g) => g.text).join(', ')} | ${verdicts(r.goals).join('<br>')} |`);
  }
  return lines.join('\n') + '\n';
}
