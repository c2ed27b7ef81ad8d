import { dirname, resolve } from 'node:path';
import { UsageError } from '../../errors.js';
import { notReplaceable, replaceFile, storePathAt, storePaths } from '../../replaceable-path.js';
import { isPostgresUrl, logRoot, resolveDbPath } from '../../store/open-store.js';
import { renderReport } from '../../report/html.js';
import { loadReport } from '../../report/report-data.js';
import { batchFolderName } from '../../store/log-layout.js';
import { printable } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { commandLineFor } from '../suggested-commands.js';
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
      const file = resolve(io.cwd, flags.html ?? `splitdance-report-${batchFolderName(batch.name)}.html`);
      checkReportPath(file, resolveDbPath(flags.db, io.cwd, io.env), io.cwd);
      const data = await loadReport(store, batch);
      const html = renderReport(data, { retryCluster: (id) => commandLineFor(target, ['retry-failed', '--cluster', id, '--run']) });
      await writeReport(file, html);
      if (flags.json) line(io.stdout, JSON.stringify({ batch: batch.name, file, attempts: data.attempts.length }));
      else if (!flags.quiet) line(io.stderr, `report for batch ${printable(batch.name)}: ${printable(file)}`);
      return 0;
    },
    { readonly: true },
  );
}

/**
 * Checks the report's path before anything is read: a regular file or nothing (a folder, a
 * symlink, a device is not replaced), never one of the store's own files.
 */
function checkReportPath(file: string, db: string, cwd: string): void {
  const shown = printable(file);
  const what = notReplaceable(file);
  if (what === 'a folder') throw new UsageError(`cannot write the report: ${shown} is a folder; give --html a file path such as ${shown}/report.html`);
  if (what) throw new UsageError(`cannot write the report ${shown}: it is ${what}, not a regular file; splitdance replaces only regular files: give --html another path`);
  const at = storePathAt(file, storePaths(isPostgresUrl(db) ? null : db, logRoot(db, cwd)));
  if (at) throw new UsageError(`cannot write the report ${shown}: it is the store's ${printable(at)}; give --html a path outside the store`);
}

/**
 * Writes the file atomically (replaceFile: exclusive, never through a symlink). What the user
 * can fix (a missing or read-only folder, a full or failing disk) is exit 2, said with the fix.
 */
async function writeReport(file: string, html: string): Promise<void> {
  try {
    await replaceFile(file, html, { what: 'the report', makeFolders: false });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const folder = printable(dirname(file));
    const shown = printable(file);
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new UsageError(`cannot write the report ${shown}: the folder ${folder} does not exist; create it (mkdir -p) or give --html a path in an existing folder`);
    }
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
      throw new UsageError(`cannot write the report ${shown}: the folder ${folder} is not writable (${code}); give --html a path in a writable folder`);
    }
    if (code === 'ENOSPC' || code === 'EDQUOT') throw new UsageError(`cannot write the report ${shown}: no space left in ${folder} (${code}); free some or give --html a path elsewhere`);
    if (code === 'EIO') throw new UsageError(`cannot write the report ${shown}: the disk under ${folder} failed (EIO); give --html a path on another disk`);
    if (code === undefined) throw new UsageError(`cannot write the report: ${(err as Error).message}; give --html another path`); // replaced meanwhile by a non-file
    throw err;
  }
}
