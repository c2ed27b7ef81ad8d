import { writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { UsageError } from '../../errors.js';
import { renderReport } from '../../report/html.js';
import { loadReport } from '../../report/report-data.js';
import { batchFolderName } from '../../store/log-layout.js';
import { printable } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { suggest } from '../suggest.js';
import { withBatch } from '../with-store.js';

export interface ReportFlags extends OutputFlags {
  db?: string;
  batch?: string;
  html?: string;
}

/** `splitdance report`: one self-contained HTML file (inline SVG and CSS, no network). */
export async function reportCommand(flags: ReportFlags, io: Io): Promise<number> {
  return withBatch(
    flags,
    io,
    async (store, batch, { target }) => {
      const data = await loadReport(store, batch);
      const file = resolve(io.cwd, flags.html ?? `splitdance-report-${batchFolderName(batch.name)}.html`);
      const html = renderReport(data, { retryCluster: (id) => suggest(target, ['retry-failed', '--cluster', id, '--run']) });
      writeReport(file, html);
      if (flags.json) line(io.stdout, JSON.stringify({ batch: batch.name, file, attempts: data.attempts.length }));
      else if (!flags.quiet) line(io.stderr, `report for batch ${printable(batch.name)}: ${printable(file)}`);
      return 0;
    },
    { readonly: true },
  );
}

/** Writes the file; a folder that is missing or not writable is the user's to fix (exit 2), said with the fix. */
function writeReport(file: string, html: string): void {
  try {
    writeFileSync(file, html, { mode: 0o600 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const folder = printable(dirname(file));
    const shown = printable(file);
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new UsageError(`cannot write the report ${shown}: the folder ${folder} does not exist; create it (mkdir -p) or give --html a path in an existing folder`);
    }
    if (code === 'EISDIR') throw new UsageError(`cannot write the report: ${shown} is a folder; give --html a file path such as ${shown}/report.html`);
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
      throw new UsageError(`cannot write the report ${shown}: the folder ${folder} is not writable (${code}); give --html a path in a writable folder`);
    }
    throw err;
  }
}
