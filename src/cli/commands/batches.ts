import { resolveDbPath } from '../../store/open-store.js';
import { cell, iso, table } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { openForReading } from '../with-store.js';

/** `splitdance batches`: every batch with its counts (reads only, so a read-only store works). */
export async function batchesCommand(flags: OutputFlags & { db?: string }, io: Io): Promise<number> {
  const store = await openForReading(resolveDbPath(flags.db, io.cwd, io.env));
  try {
    const rows = [];
    for (const b of await store.listBatches()) {
      rows.push({ batch: b.name, source: b.source, createdAt: iso(b.createdAt), paused: b.paused, ...(await store.counts(b.id)) });
    }
    if (flags.json) line(io.stdout, JSON.stringify(rows));
    else
      line(
        io.stdout,
        table([
          ['BATCH', 'CREATED', 'TOTAL', 'SUCCEEDED', 'FAILED', 'OPEN', 'SOURCE'],
          ...rows.map((r) => [
            cell(r.batch, 1000),
            r.createdAt ?? '',
            String(r.total),
            String(r.succeeded),
            String(r.failed),
            String(r.pending + r.retrying + r.running + r.queued),
            cell(r.source, 1000),
          ]),
        ]),
      );
    return 0;
  } finally {
    await store.close();
  }
}
