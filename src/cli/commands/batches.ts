import { openStore, resolveDbPath } from '../../store/open-store.js';
import { cell, iso, table } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';

/** `splitdance batches`: every batch with its counts (reads only, so a read-only store works). */
export async function batchesCommand(flags: OutputFlags & { db?: string }, io: Io): Promise<number> {
  const store = await openStore(resolveDbPath(flags.db, io.cwd, io.env), 'read');
  try {
    const rows = [];
    for (const b of await store.listBatches()) {
      rows.push({ batch: b.name, source: b.source, createdAt: iso(b.createdAt), paused: b.paused, ...(await store.counts(b.id)) });
    }
    if (flags.json) {
      line(io.stdout, JSON.stringify(rows));
      return 0;
    }
    const cells = rows.map((r) => [r.batch, r.createdAt ?? '', String(r.total), String(r.succeeded), String(r.failed), String(r.pending + r.retrying + r.running + r.queued), r.source]);
    // As `tasks`: a table with a header on a terminal; piped, tab-separated rows only (for cut, awk, read).
    if (io.stdoutTty) line(io.stdout, table([['BATCH', 'CREATED', 'TOTAL', 'SUCCEEDED', 'FAILED', 'OPEN', 'SOURCE'], ...cells.map((r) => r.map((v) => cell(v, 1000)))]));
    else for (const r of cells) line(io.stdout, r.map((v) => cell(v, 10_000)).join('\t'));
    return 0;
  } finally {
    await store.close();
  }
}
