#!/usr/bin/env node
// `npm run build && node bench/render.mjs`: µs to render one task's `--exec` command (the
// worker does this per attempt), median of 7 rounds of 200k renders. On a loaded 2-core
// machine (three runs each), lexing and quoting the line and then parsing it back for a direct
// argv took 2.6–2.8 µs for `gzip -k {}`, 3.8–4.3 for `convert {} {.}.png`, 4.1 for the `cp`
// template, 3.7–4.3 for the shell line; the template compiled once and rendered straight to
// argv takes 0.15–0.27, 0.41–0.59, 0.58–0.76 and 0.27–0.56 µs.
import { renderExec } from '../dist/worker/exec-command.js';

const TEMPLATES = ['gzip -k {}', 'convert {} {.}.png', 'cp -- "{}" "{dir}/{stem}.bak"', 'wc -l < {} > {.}.count'];
const N = 200_000;
const tasks = Array.from({ length: 1000 }, (_, i) => ({
  token: 1,
  key: `2025/01/app-${i}.log`,
  batch: 'nightly',
  stage: 'main',
  seq: i,
  attempt: 1,
  logFile: '/dev/null',
  inputs: {},
  payload: { version: 1, path: `/data/src/2025/01/app-${i}.log`, rel: `2025/01/app-${i}.log` },
}));

let sink = 0;
for (const template of TEMPLATES) {
  const rounds = [];
  for (let r = 0; r < 7; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) sink += renderExec(template, tasks[i % tasks.length]).argv.length;
    rounds.push(Number(process.hrtime.bigint() - t0) / 1e3 / N);
  }
  rounds.sort((a, b) => a - b);
  const form = renderExec(template, tasks[0]).fallback === null ? 'sh -c' : 'direct';
  console.log(`${template.padEnd(32)} ${form.padEnd(6)} ${rounds[3].toFixed(3)} µs/render`);
}
if (sink === 0) console.log(''); // keeps the loop from being optimised away
