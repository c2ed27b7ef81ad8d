import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { releaseLostClaims } from '../../src/coordinator/outage.js';
import { openStore } from '../../src/store/open-store.js';
import { tempDir } from '../helpers/cli.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { keys, newBatch, spec } from './contract.js';

// A claim the server committed while the outage lost its reply leaves tasks RUNNING under the
// run's owner that no worker runs; the first tick after the outage gives them back, uncharged.
const freshDb = pgSchemas('lost');
const backends: [string, () => string][] = [['SQLite', () => join(tempDir('sd-lost-'), 'store.db')]];
if (PG_URL) backends.push(['PostgreSQL', () => freshDb().db]);

describe.each(backends)('releaseLostClaims (%s)', (_, location) => {
  it('gives back, uncharged, only the RUNNING tasks of this owner that the run does not know', async () => {
    const store = await openStore(location(), 'create');
    try {
      const { batch } = await store.enqueue(newBatch(), keys(4).map(spec));
      const now = Date.now();
      const claim = (owner: string, n: number) =>
        store.claim({ batchId: batch.id, owner, host: 'h', now, leaseMs: 30_000, slots: Array.from({ length: n }, (_, i) => ({ workerId: `w${i}`, pid: null })) });
      const [known, lost] = await claim('owner-A', 2);
      const [other] = await claim('owner-B', 1);
      expect(await releaseLostClaims(store, batch.id, 'owner-A', new Set([known!.id]), now + 5)).toBe(1);
      const row = async (id: number) => (await store.listTasks({ batchId: batch.id })).find((t) => t.id === id)!;
      expect((await row(lost!.id)).status).toBe('PENDING');
      expect((await row(lost!.id)).attempts).toBe(0); // INTERRUPTED: not counted
      expect((await row(known!.id)).status).toBe('RUNNING');
      expect((await row(other!.id)).status).toBe('RUNNING');
      expect((await store.attemptsOf(lost!.id)).map((a) => a.outcome)).toEqual(['INTERRUPTED']);
      expect(await releaseLostClaims(store, batch.id, 'owner-A', new Set([known!.id]), now + 6)).toBe(0);
    } finally {
      await store.close();
    }
  });
});
