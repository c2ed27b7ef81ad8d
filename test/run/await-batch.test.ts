import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_SETTINGS, definitionOf } from '../../src/job/job-definition.js';
import { awaitBatch } from '../../src/run/await-batch.js';
import { openStore } from '../../src/store/open-store.js';
import { tempDir } from '../helpers/cli.js';

// `worker --batch B` / `watch --batch B` before B exists, in-process on a real SQLite store (its
// waits in fake time; PollBackoff's own table is poll-backoff.test.ts): a signal ends the wait at
// once, the wait is said once.

async function createBatch(db: string, name: string): Promise<void> {
  const store = await openStore(db, 'create');
  try {
    const job = definitionOf(join(db, '..'), { ...DEFAULT_SETTINGS, handler: { kind: 'exec', template: 'true' } });
    await store.enqueue({ name, source: '.', job, maxAttempts: 1 }, [{ key: 'k', payload: { version: 1, path: 'k', rel: 'k' }, fingerprint: 'k:1' }]);
  } finally {
    await store.close();
  }
}

afterEach(() => {
  vi.useRealTimers();
});

describe('awaitBatch', () => {
  it('true at once for a batch already there, saying nothing', async () => {
    const db = join(tempDir('sd-await-'), 'store.db');
    await createBatch(db, 'nightly');
    const said: string[] = [];
    expect(await awaitBatch(db, 'nightly', new AbortController().signal, (m) => said.push(m))).toBe(true);
    expect(said).toEqual([]);
  });

  it('looks again and again, says so once, and is true once the store and the batch are there', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const db = join(tempDir('sd-await-'), 'store.db');
    const said: string[] = [];
    let found: boolean | undefined;
    void awaitBatch(db, 'nightly', new AbortController().signal, (m) => said.push(m)).then((v) => (found = v));
    await vi.advanceTimersByTimeAsync(1200); // no store: three looks
    expect(said).toEqual([`waiting for batch "nightly" to appear in ${db} (polling every 500 ms; Ctrl-C stops)`]);
    expect(found).toBe(undefined);
    await createBatch(db, 'other'); // a store, not the batch
    await vi.advanceTimersByTimeAsync(1000);
    expect(found).toBe(undefined);
    await createBatch(db, 'nightly');
    await vi.waitFor(async () => {
      await vi.advanceTimersByTimeAsync(500);
      expect(found).toBe(true);
    });
    expect(said).toHaveLength(1);
  });

  it('a signal ends the wait at once, with no timer left behind: false', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const db = join(tempDir('sd-await-'), 'store.db');
    const c = new AbortController();
    const waiting = awaitBatch(db, 'nightly', c.signal, () => {});
    await vi.advanceTimersByTimeAsync(100);
    c.abort('SIGINT');
    expect(await waiting).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });
});
