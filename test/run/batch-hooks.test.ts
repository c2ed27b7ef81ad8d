import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runHooks } from '../../src/run/batch-hooks.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { ShutdownSignal } from '../../src/coordinator/run-types.js';

// runHooks on a real SQLite store: a batch is at its end only when every task finished and every
// declared output is in place; a hook owed at that end runs once.

const noSignals = { seen: (): ShutdownSignal | null => null, each: () => () => undefined };
const opened: SqliteStore[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
});

async function storeWithOneSuccess(outputTemp: string | null) {
  const dir = mkdtempSync(join(tmpdir(), 'sd-hooks-'));
  const store = await SqliteStore.open(join(dir, 'store.db'), { create: true });
  opened.push(store);
  const { batch } = await store.enqueue(
    { name: 'b', source: dir, job: { version: 1 }, maxAttempts: 1 },
    [{ key: 'a', payload: { version: 1, path: join(dir, 'a'), rel: 'a' }, fingerprint: null }],
  );
  const now = Date.now();
  const [t] = await store.claim({ batchId: batch.id, owner: 'o', host: 'h', now, leaseMs: 60_000, slots: [{ workerId: 'w1', pid: 1 }] });
  await store.settle([{ token: t!.token, taskId: t!.id, outcome: 'SUCCESS', endedAt: now + 1, durationMs: 1, exitCode: 0, signal: null, error: null, outputTail: null, logPath: null, outputTemp }]);
  return { dir, store, batch: (await store.findBatch('b'))! };
}

describe('runHooks', () => {
  it('a success whose declared output waits at its temporary path: not the end, no hook run, looked at again', async () => {
    const { dir, store, batch } = await storeWithOneSuccess(join(tmpdir(), 'never-placed.tmp'));
    const log = join(dir, 'hook.log');
    const notes: string[] = [];
    const settled = await runHooks(store, batch, { onComplete: `echo ran >> ${log}`, onFailure: null }, (m) => notes.push(m), noSignals);
    expect(settled).toBe(false);
    expect(existsSync(log)).toBe(false);
    expect(await store.hooksOf(batch.id)).toEqual([]);
  });

  it('at the end: runs it once, and says nothing is owed any more', async () => {
    const { dir, store, batch } = await storeWithOneSuccess(null);
    const log = join(dir, 'hook.log');
    const hooks = { onComplete: `echo "ran $SPLITDANCE_SUCCEEDED/$SPLITDANCE_TOTAL" >> ${log}`, onFailure: `echo failed >> ${log}` };
    expect(await runHooks(store, batch, hooks, () => undefined, noSignals)).toBe(true);
    expect(await runHooks(store, batch, hooks, () => undefined, noSignals)).toBe(true);
    expect(readFileSync(log, 'utf8')).toBe('ran 1/1\n');
  });
});
