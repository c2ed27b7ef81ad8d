import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { safeName } from '../../coordinator/coordinator.js';
import { renderReport } from '../../report/html.js';
import { loadReport } from '../../report/report-data.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { withBatch } from '../with-store.js';

export interface ReportFlags extends OutputFlags {
  db?: string;
  batch?: string;
  html?: string;
}

/** `splitdance report`: one self-contained HTML file (inline SVG and CSS, no network). */
export async function reportCommand(flags: ReportFlags, io: Io): Promise<number> {
  return withBatch(flags, io, async (store, batch) => {
    const data = await loadReport(store, batch);
    const file = resolve(io.cwd, flags.html ?? `splitdance-report-${safeName(batch.name)}.html`);
    writeFileSync(file, renderReport(data), { mode: 0o600 });
    if (flags.json) line(io.stdout, JSON.stringify({ batch: batch.name, file, attempts: data.attempts.length }));
    else if (!flags.quiet) line(io.stderr, `report for batch ${batch.name}: ${file}`);
    return 0;
  });
}
