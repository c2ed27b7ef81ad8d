import { openStore, resolveDbPath } from '../../store/open-store.js';
import { iso, table } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';

/** `splitdance batches`: every batch with its counts. */
export async function batchesCommand(flags: OutputFlags & { db?: string }, io: Io): Promise<number> {
  const store = await openStore(resolveDbPath(flags.db, io.cwd, io.env), { create: false });
  try {
    const rows = [];
    for (const b of await store.listBatches()) {
      rows.push({ name: b.name, source: b.source, createdAt: iso(b.createdAt), paused: b.paused, ...(await store.counts(b.id)) });
    }
    if (flags.json) line(io.stdout, JSON.stringify(rows, null, 2));
    else
      line(
        io.stdout,
        table([
          ['BATCH', 'CREATED', 'TOTAL', 'SUCCEEDED', 'FAILED', 'OPEN', 'SOURCE'],
          ...rows.map((r) => [r.name, r.createdAt ?? '', String(r.total), String(r.succeeded), String(r.failed), String(r.pending + r.retrying + r.running), r.source]),
        ]),
      );
    return 0;
  } finally {
    await store.close();
  }
}
