import { describe, expect, it } from 'vitest';
import { spec, keys, newBatch, ending, type Harness } from './harness.js';

/** The TaskStore contract, enqueue: creating batches, inserting tasks, noting changed inputs. */
export function enqueueContract(h: Harness): void {
  const { setup, claim, claimOne, task, countsAddUp } = h;
  describe('identity', () => {
    it('is 32 random hex digits, the same on every read, and differs between two stores', async () => {
      expect(h.store.identity).toMatch(/^[0-9a-f]{32}$/);
      await h.store.enqueue(newBatch(), keys(2).map(spec));
      expect(h.store.identity).toBe(h.store.identity);
      const other = await h.makeStore();
      try {
        expect(other.store.identity).toMatch(/^[0-9a-f]{32}$/);
        expect(other.store.identity).not.toBe(h.store.identity);
      } finally {
        await other.cleanup();
      }
    });
  });

  describe('enqueue and batches', () => {
    it('creates the batch and inserts every spec as a PENDING task', async () => {
      const r = await h.store.enqueue(newBatch('logs', 4), keys(3).map(spec));
      expect(r.created).toBe(true);
      expect(r.inserted).toBe(3);
      expect(r.batch).toMatchObject({ name: 'logs', source: '/data/logs', job: newBatch('logs', 4).job, paused: false });
      expect(typeof r.batch.id).toBe('number');
      for (const key of keys(3)) {
        const t = await task(r.batch.id, key);
        expect(t).toMatchObject({ key, stage: '', status: 'PENDING', attempts: 0, maxAttempts: 4, payload: spec(key).payload });
        expect(t).toMatchObject({ fingerprint: spec(key).fingerprint, leaseOwner: null, result: null, lastError: null });
        expect(t.finishedAt).toBeNull();
      }
      expect(await countsAddUp(r.batch.id)).toEqual({ total: 3, pending: 3, retrying: 0, running: 0, queued: 0, succeeded: 0, failed: 0, cancelled: 0 });
    });

    it('inserts nothing when the same specs are enqueued again', async () => {
      const first = await h.store.enqueue(newBatch(), keys(5).map(spec));
      const again = await h.store.enqueue(newBatch(), keys(5).map(spec));
      expect(again.created).toBe(false);
      expect(again.inserted).toBe(0);
      expect(again.batch.id).toBe(first.batch.id);
      expect((await h.store.counts(first.batch.id)).total).toBe(5);
    });

    it('inserts only the keys the batch lacks, leaving existing tasks as they are', async () => {
      const id = await setup(3);
      const running = await claimOne(id, Date.now());
      const more = await h.store.enqueue(newBatch(), keys(5).map(spec));
      expect(more.inserted).toBe(2);
      expect((await h.store.counts(id)).total).toBe(5);
      expect(await task(id, running.key)).toMatchObject({ status: 'RUNNING', attempts: 1 });
      expect((await h.store.listTasks({ batchId: id })).map((t) => t.key)).toEqual(keys(5));
    });

    it('inserts a key repeated within one enqueue once', async () => {
      const r = await h.store.enqueue(newBatch(), ['a', 'b', 'a'].map(spec));
      expect(r.inserted).toBe(2);
      expect((await h.store.counts(r.batch.id)).total).toBe(2);
    });

    it('pauses and resumes a batch (setPaused), seen by findBatch and listBatches', async () => {
      const r = await h.store.enqueue(newBatch('p'), ['a'].map(spec));
      expect(r.batch.paused).toBe(false);
      await h.store.setPaused(r.batch.id, true);
      expect((await h.store.findBatch('p'))!.paused).toBe(true);
      expect((await h.store.listBatches()).find((b) => b.name === 'p')!.paused).toBe(true);
      await h.store.setPaused(r.batch.id, false);
      expect((await h.store.findBatch('p'))!.paused).toBe(false);
    });

    it('creates a batch with no tasks from an empty source', async () => {
      const r = await h.store.enqueue(newBatch('empty'), []);
      expect(r).toMatchObject({ created: true, inserted: 0 });
      expect(await h.store.findBatch('empty')).toBeDefined();
      expect((await h.store.counts(r.batch.id)).total).toBe(0);
    });

    it('streams any iterable, many thousands of specs', async () => {
      function* many() {
        for (let i = 0; i < 12_345; i++) yield spec(`f/${String(i).padStart(6, '0')}`);
      }
      const r = await h.store.enqueue(newBatch(), many());
      expect(r.inserted).toBe(12_345);
      expect((await h.store.counts(r.batch.id)).pending).toBe(12_345);
      expect(await task(r.batch.id, 'f/012344')).toMatchObject({ status: 'PENDING' });
    });

    it('is all-or-nothing: a source that throws midway leaves no batch and no tasks', async () => {
      function* broken() {
        for (let i = 0; i < 10; i++) yield spec(`x${i}`);
        throw new Error('disk went away while walking');
      }
      await expect(h.store.enqueue(newBatch('broken'), broken())).rejects.toThrow('disk went away');
      expect(await h.store.findBatch('broken')).toBeUndefined();
      expect(await h.store.listBatches()).toEqual([]);
      // The store is still usable and the aborted rows did not leak into the next enqueue.
      const ok = await h.store.enqueue(newBatch('ok'), ['y'].map(spec));
      expect(ok.inserted).toBe(1);
      expect((await h.store.listTasks({ batchId: ok.batch.id })).map((t) => t.key)).toEqual(['y']);
    });

    it('is all-or-nothing for an existing batch too', async () => {
      const id = await setup(2);
      function* broken() {
        yield spec('new-1');
        throw new Error('walk failed');
      }
      await expect(h.store.enqueue(newBatch(), broken())).rejects.toThrow('walk failed');
      expect((await h.store.listTasks({ batchId: id })).map((t) => t.key)).toEqual(keys(2));
    });

    it('finds batches by name, lists them oldest first and knows the latest', async () => {
      expect(await h.store.latestBatch()).toBeUndefined();
      expect(await h.store.listBatches()).toEqual([]);
      const a = await h.store.enqueue(newBatch('a'), []);
      const b = await h.store.enqueue(newBatch('b'), []);
      const c = await h.store.enqueue(newBatch('c'), []);
      expect(await h.store.findBatch('b')).toEqual(b.batch);
      expect(await h.store.findBatch('nope')).toBeUndefined();
      expect((await h.store.latestBatch())?.name).toBe('c');
      expect((await h.store.listBatches()).map((x) => x.name)).toEqual(['a', 'b', 'c']);
      expect(new Set([a.batch.id, b.batch.id, c.batch.id]).size).toBe(3);
      expect(c.batch.createdAt).toBeGreaterThanOrEqual(a.batch.createdAt);
    });
  });

  describe('statuses, changed inputs, history and prune', () => {
    /** `spec(key)` whose file now shows another size:mtime. */
    const changedSpec = (key: string) => ({ ...spec(key), fingerprint: `${key.length + 100}:1800000000000` });

    it('notes succeeded tasks whose file changed, and re-queues them only with rerunChanged', async () => {
      const first = await h.store.enqueue(newBatch(), keys(3).map(spec));
      expect(first).toMatchObject({ changed: 0, requeued: 0 });
      const id = first.batch.id;
      const now = Date.now();
      const [a, b] = await claim(id, now, { slots: 2 });
      await h.store.settle([ending(a!, 'SUCCESS', now + 1, { result: '"a"' }), ending(b!, 'SUCCESS', now + 1, { result: '"b"' })]);
      expect(await h.store.changedCount(id)).toBe(0);

      // k000 (succeeded) and k002 (never ran) changed; k001 did not.
      const specs = () => [changedSpec('k000'), spec('k001'), changedSpec('k002')];
      const seen = await h.store.enqueue(newBatch(), specs());
      expect(seen).toMatchObject({ created: false, inserted: 0, changed: 1, requeued: 0 });
      expect(await h.store.changedCount(id)).toBe(1);
      expect(await task(id, 'k000')).toMatchObject({ status: 'SUCCESS', result: '"a"', fingerprint: spec('k000').fingerprint });
      // An unfinished task will run on the file as it is now.
      expect(await task(id, 'k002')).toMatchObject({ status: 'PENDING', fingerprint: changedSpec('k002').fingerprint });
      expect(await h.store.enqueue(newBatch(), specs())).toMatchObject({ changed: 1, requeued: 0 });

      const rerun = await h.store.enqueue(newBatch(), specs(), { rerunChanged: true });
      expect(rerun).toMatchObject({ inserted: 0, changed: 0, requeued: 1 });
      expect(await task(id, 'k000')).toMatchObject({
        status: 'PENDING',
        attempts: 0,
        result: null,
        finishedAt: null,
        fingerprint: changedSpec('k000').fingerprint,
      });
      expect(await task(id, 'k001')).toMatchObject({ status: 'SUCCESS', result: '"b"' });
      expect(await h.store.changedCount(id)).toBe(0);
      expect(await countsAddUp(id)).toMatchObject({ pending: 2, succeeded: 1 });
      // k000 ran once before it was re-queued: its attempt number goes on counting, its budget starts over.
      expect((await claim(id, now + 10, { slots: 3 })).map((t) => [t.key, t.attempt, t.counted])).toEqual([
        ['k000', 2, 1],
        ['k002', 1, 1],
      ]);
    });

    it('forgets a change when the file is back as it was when the task succeeded', async () => {
      const id = await setup(1);
      const now = Date.now();
      await h.store.settle([ending(await claimOne(id, now), 'SUCCESS', now + 1)]);
      expect((await h.store.enqueue(newBatch(), [changedSpec('k000')])).changed).toBe(1);
      expect((await h.store.enqueue(newBatch(), [spec('k000')])).changed).toBe(0);
      expect(await h.store.changedCount(id)).toBe(0);
      expect((await h.store.enqueue(newBatch(), [spec('k000')], { rerunChanged: true })).requeued).toBe(0);
      expect(await task(id, 'k000')).toMatchObject({ status: 'SUCCESS' });
    });
  });
}
