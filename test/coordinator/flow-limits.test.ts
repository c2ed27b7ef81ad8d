import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FlowLimits, type FlowSettings } from '../../src/coordinator/flow-limits.js';
import { DEFAULT_SETTINGS, definitionOf } from '../../src/job/job-definition.js';
import { openStore } from '../../src/store/open-store.js';
import type { Outcome, Settlement, TaskStore } from '../../src/store/task-store.js';
import { tempDir } from '../helpers/cli.js';

// What a coordinator may start now (coordinator/flow-limits.ts): `set -j`, --rate and --adaptive
// as stored, and the level it publishes, on a real SQLite store.

const ended = (outcome: Outcome, at: number, durationMs = 100): Settlement => ({
  token: 1,
  taskId: 1,
  outcome,
  endedAt: at,
  durationMs,
  exitCode: null,
  signal: null,
  error: null,
  outputTail: null,
  logPath: null,
});
const off: FlowSettings = { rate: null, rateKey: false, limit: null, adaptive: false };
const notes: string[] = [];
const flow = (settings = off, slots = 4) => new FlowLimits(settings, slots, (m) => notes.push(m));

describe('FlowLimits', () => {
  it('--rate-key: the rate goes to the key gates of the claim, not to the batch gate; idle workers only, as under any rate', () => {
    const rate = { n: 5, periodMs: 1000 };
    const f = flow({ ...off, rate, rateKey: true });
    expect([f.rate, f.keyed, f.holds]).toEqual([null, rate, true]);
    f.follow({ ...off, rate, rateKey: false });
    expect([f.rate, f.keyed]).toEqual([rate, null]);
    // `set --rate none` on a keyed batch: nothing limits starts.
    f.follow({ ...off, rateKey: true });
    expect([f.rate, f.keyed, f.holds]).toEqual([null, null, false]);
  });

  it("set -j: a cap below the run's -j; above it, the pool is to widen once (follow asks until widened); none: back to the run's own", () => {
    const f = flow();
    expect([f.cap, f.holds]).toEqual([null, false]);
    expect(f.follow({ ...off, limit: 2 })).toBeNull();
    expect([f.cap, f.holds]).toEqual([2, true]);
    expect(f.follow({ ...off, limit: 8 })).toBe(8);
    expect(f.follow({ ...off, limit: 8 })).toBe(8); // not widened yet (the widening failed, say): asked again
    f.widened(8);
    expect(f.follow({ ...off, limit: 8 })).toBeNull();
    expect(f.cap).toBeNull();
    expect(f.follow(off)).toBeNull();
    expect(f.cap).toBe(4); // the run's own -j, below the 8 workers it now has
  });

  it('--adaptive: a cap of its level, none once the level reaches -j; a group is one attempt', () => {
    const f = flow({ ...off, adaptive: true }, 3);
    expect(f.cap).toBe(1);
    f.ended([ended('SUCCESS', 1000)], 1);
    expect(f.cap).toBe(2);
    // A group of 10 items that succeeded together: one success, not ten.
    f.ended(Array.from({ length: 10 }, () => ended('SUCCESS', 1100)), 2);
    expect(f.cap).toBeNull(); // level 3 of -j 3: nothing held back
    expect(f.holds).toBe(false);
    // A group that answered busy (every item BUSY): one cut, said once.
    f.ended(Array.from({ length: 5 }, () => ended('BUSY', 1200, 10)), 3);
    expect(f.cap).toBe(1);
    expect(notes.filter((n) => n.startsWith('--adaptive: an attempt ended BUSY'))).toHaveLength(1);
  });

  it("--adaptive's pace gates starts after the first cut, and says when the next may start", () => {
    const f = flow({ ...off, adaptive: true }, 8);
    expect(f.paced(5, 0)).toEqual({ granted: 5, wakeAt: null });
    for (let t = 0; t < 2000; t += 100) f.ended([ended('SUCCESS', t, 50)], 8); // 10/s
    f.ended([ended('BUSY', 2000, 5)], 8);
    const first = f.paced(5, 3000);
    expect(first.granted).toBeGreaterThanOrEqual(1);
    expect(first.granted).toBeLessThanOrEqual(2); // a pace near 9.5/s: at most two at once
    expect(first.wakeAt).toBeGreaterThan(3000);
    expect(f.paced(5, 3001).granted).toBe(0);
  });

  describe('publish', () => {
    let store: TaskStore;
    let batchId: number;
    beforeEach(async () => {
      const dir = tempDir('sd-flow-');
      store = await openStore(join(dir, 'store.db'), 'create');
      const job = definitionOf(dir, { ...DEFAULT_SETTINGS, handler: { kind: 'exec', template: 'true' } });
      await store.enqueue({ name: 'b', source: dir, job, maxAttempts: 1 }, [{ key: 'k', payload: { version: 1, path: join(dir, 'k'), rel: 'k' }, fingerprint: 'k:1' }]);
      batchId = (await store.findBatch('b'))!.id;
    });
    afterEach(async () => {
      await store.close();
    });
    const levels = () => store.adaptiveLevels(batchId, 0);

    it('writes the level when it changes and every 10 s, not at each look; removes it at the end or when --adaptive goes off', async () => {
      const f = flow({ ...off, adaptive: true }, 4);
      await f.publish(store, batchId, 'me', 1000);
      const [first] = await levels();
      expect(first).toMatchObject({ owner: 'me', level: 1, max: 4, pace: null, updatedAt: 1000 });
      await f.publish(store, batchId, 'me', 5000); // unchanged, 4 s later: no write
      expect((await levels())[0]!.updatedAt).toBe(1000);
      await f.publish(store, batchId, 'me', 11_000); // 10 s later: refreshed
      expect((await levels())[0]!.updatedAt).toBe(11_000);
      f.ended([ended('SUCCESS', 11_500)], 1);
      await f.publish(store, batchId, 'me', 11_600); // changed: written at once
      expect((await levels())[0]).toMatchObject({ level: 2, updatedAt: 11_600 });
      f.follow(off);
      await f.publish(store, batchId, 'me', 12_000);
      expect(await levels()).toEqual([]);
      f.follow({ ...off, adaptive: true });
      await f.publish(store, batchId, 'me', 13_000);
      expect(await levels()).toHaveLength(1);
      await f.publish(store, batchId, 'me', 13_100, true);
      expect(await levels()).toEqual([]);
    });
  });
});
