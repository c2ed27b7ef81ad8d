#!/usr/bin/env node
// `npm run bench`: splitdance side by side with what people use instead, on this machine,
// in one process of measurement. Medians of several runs, the tools of each benchmark
// interleaved; ratios, splitdance's own cost per task and a verdict per goal, printed and
// written to bench/results.md. Prerequisites: GNU parallel (`apt-get install parallel`) and a
// C compiler (for the CPU meter, bench/reap.c). Installs nothing.
import { RUNS, SIZE, ONLY, want } from './settings.mjs';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, work } from './measure.mjs';
import { gzipTree, latency, machineRates, shellTasks } from './exec-rows.mjs';
import { handlerTasks } from './handler-row.mjs';
import { scale, sharedStore, sharedStoreScale, split } from './store-rows.mjs';
import { machineLine, table } from './table.mjs';
import { watchedRun } from './watch-row.mjs';
import { itemsFromStdin, millionItems } from './items-rows.mjs';
import { fleet } from './fleet-row.mjs';
import { groupedHandler, manyItemsPerCall } from './group-rows.mjs';
import { startup } from './startup-row.mjs';
import { claimOrder } from './order-row.mjs';
import { adaptive } from './adaptive-row.mjs';
import { tenMillion } from './ten-million-row.mjs';
import { verdicts } from './verdict.mjs';

const rows = [];
function record(row) {
  rows.push(row);
  console.log(`${row.benchmark}: ${row.entries.map((e) => `${e.name} ${e.rate.toFixed(0)}/s`).join(', ')}; ${verdicts(row.goals).join('; ')}`);
}

let machine;
if (want('shell')) {
  const shell = shellTasks();
  machine = shell.machine;
  console.log(machineLine(machine));
  record(shell.row);
} else {
  machine = machineRates();
  console.log(machineLine(machine));
}
if (want('startup')) record(startup());
if (want('handler')) record(handlerTasks());
if (want('gzip')) record(gzipTree());
if (want('latency')) record(latency());
if (want('scale')) record(await scale());
if (want('split')) record(split());
if (want('watch')) record(await watchedRun());
if (want('items')) record(itemsFromStdin());
if (want('items')) record(await millionItems());
if (want('groups')) record(manyItemsPerCall());
if (want('groups')) record(groupedHandler());
if (want('order')) record(claimOrder());
if (want('adaptive')) record(adaptive());
if (want('ten')) record(await tenMillion());
if (want('pg') && process.env.SPLITDANCE_PG_URL) record(sharedStore(process.env.SPLITDANCE_PG_URL));
if (want('pg') && process.env.SPLITDANCE_PG_URL) record(await sharedStoreScale(process.env.SPLITDANCE_PG_URL));

if (want('fleet')) for (const row of await fleet()) record(row);

const text = table({ rows, machine, runs: RUNS, size: SIZE });
if (!ONLY) {
  mkdirSync(join(ROOT, 'bench'), { recursive: true });
  writeFileSync(join(ROOT, 'bench/results.md'), text);
}
console.log(`\n${text}`);
rmSync(work, { recursive: true, force: true });
