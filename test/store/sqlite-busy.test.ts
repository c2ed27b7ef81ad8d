// The busy timeout is read when open-sqlite.ts loads, so set it before importing the store.
process.env.SPLITDANCE_BUSY_TIMEOUT_MS = '300';

import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/cli.js';
import { keys, newBatch, spec } from './contract.js';

const { SqliteStore } = await import('../../src/store/sqlite/sqlite-store.js');

describe('SqliteStore under a foreign write lock', () => {
  const cleanups: (() => void | Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function lockedStore() {
    const dir = tempDir('sd-busy-');
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'splitdance.db');
    const store = SqliteStore.open(path, { create: true });
    cleanups.push(() => store.close());
    const { batch } = await store.enqueue(newBatch(), keys(3).map(spec));
    const foreign = new Database(path);
    cleanups.push(() => {
      if (foreign.inTransaction) foreign.exec('ROLLBACK');
      foreign.close();
    });
    foreign.exec('BEGIN IMMEDIATE');
    return { store, batchId: batch.id, foreign };
  }

  /** better-sqlite3 blocks synchronously inside the call, so time the call itself. */
  async function rejection(write: () => Promise<unknown>): Promise<{ err: Error; ms: number }> {
    const start = performance.now();
    try {
      await write();
    } catch (err) {
      return { err: err as Error, ms: performance.now() - start };
    }
    throw new Error('expected the write to fail');
  }

  it('fails a claim with StoreError after the busy timeout, and it works once the lock is gone', async () => {
    const { store, batchId, foreign } = await lockedStore();
    const now = Date.now();
    const req = { batchId, owner: 'o', host: 'h', now, leaseMs: 1000, slots: [{ workerId: 'w', pid: 1 }] };
    const { err, ms } = await rejection(() => store.claim(req));
    expect(err.name).toBe('StoreError');
    expect(err.message).toMatch(/locked/);
    expect(ms).toBeGreaterThanOrEqual(250);
    expect(ms).toBeLessThan(5000);
    // Readers are not blocked by a writer in WAL mode, and the failed claim changed nothing.
    expect(await store.counts(batchId)).toMatchObject({ pending: 3, running: 0 });
    foreign.exec('ROLLBACK');
    expect(await store.claim(req)).toHaveLength(1);
  });

  it('fails an enqueue with StoreError and writes none of it', async () => {
    const { store, batchId, foreign } = await lockedStore();
    const { err } = await rejection(() => store.enqueue(newBatch(), keys(10).map(spec)));
    expect(err.name).toBe('StoreError');
    const { err: err2 } = await rejection(() => store.enqueue(newBatch('other'), keys(2).map(spec)));
    expect(err2.name).toBe('StoreError');
    foreign.exec('ROLLBACK');
    expect((await store.counts(batchId)).total).toBe(3);
    expect(await store.findBatch('other')).toBeUndefined();
    expect((await store.enqueue(newBatch(), keys(10).map(spec))).inserted).toBe(7);
  });

  it('fails settle, heartbeat, releaseStale, retryFailed and updateJob with StoreError', async () => {
    const { store, batchId, foreign } = await lockedStore();
    foreign.exec('ROLLBACK');
    const now = Date.now();
    const [t] = await store.claim({ batchId, owner: 'o', host: 'h', now, leaseMs: 10, slots: [{ workerId: 'w', pid: 1 }] });
    foreign.exec('BEGIN IMMEDIATE');
    const settlement = {
      token: t!.token,
      taskId: t!.id,
      outcome: 'SUCCESS' as const,
      endedAt: now + 1,
      durationMs: 1,
      exitCode: 0,
      signal: null,
      error: null,
      outputTail: null,
      logPath: null,
    };
    for (const write of [
      () => store.settle([settlement]),
      () => store.heartbeat('o', now + 1000),
      () => store.releaseStale(batchId, now + 100, [], 'self'),
      () => store.retryFailed({ batchId }),
      () => store.updateJob(batchId, { version: 1 }, 9),
    ]) {
      const { err, ms } = await rejection(write);
      expect(err.name).toBe('StoreError');
      expect(ms).toBeGreaterThanOrEqual(250);
    }
    foreign.exec('ROLLBACK');
    expect(await store.settle([settlement])).toEqual([{ token: t!.token, status: 'SUCCESS' }]);
  });
});
