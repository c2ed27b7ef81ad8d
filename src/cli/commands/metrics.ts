import { batchMetrics } from '../../status/batch-metrics.js';
import { prometheusText } from '../../status/prometheus-text.js';
import { openStore, resolveDbPath } from '../../store/open-store.js';
import type { Io } from '../io.js';
import { resolveBatch } from '../resolve-batch.js';
import { givenDb } from '../suggested-commands.js';

export interface MetricsFlags {
  db?: string;
  batch?: string;
}

/**
 * `splitdance metrics`: the Prometheus text format on stdout, for every batch in the store (what
 * a scrape wants), or for `--batch B` only. Reads only, so a read-only store works.
 */
export async function metricsCommand(flags: MetricsFlags, io: Io): Promise<number> {
  const store = await openStore(resolveDbPath(flags.db, io.cwd, io.env), 'read');
  try {
    const batches = flags.batch === undefined ? await store.listBatches() : [await resolveBatch(store, flags.batch, givenDb(flags.db, io))];
    const facts = [];
    for (const b of batches) facts.push(await batchMetrics(store, b));
    io.stdout.write(await prometheusText(facts));
    return 0;
  } finally {
    await store.close();
  }
}
