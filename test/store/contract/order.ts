import { describe, expect, it } from 'vitest';
import type { TaskSpec } from '../../../src/store/task-store.js';
import { durationKey, LEARNED_RANK } from '../../../src/store/task-spec.js';
import { ending, keys, newBatch, spec, type Harness } from './harness.js';

/** `key` ranked as the enqueue is given it (task-order.ts computes these from --order and --priority). */
const ranked = (key: string, rank: number, priority = 0): TaskSpec => ({ ...spec(key), rank, ...(priority ? { priority } : {}) });

/**
 * The TaskStore contract, claim order (SPEC §10): never-tried tasks are claimed by priority
 * (higher first), then rank (lower first), then key; a due retry before any of them, earliest
 * due first; a re-enqueue re-ranks the tasks that wait, never the ones that started.
 */
export function orderContract(h: Harness): void {
  const { claim } = h;
  const claimAll = async (batchId: number, now: number) => {
    const seen: string[] = [];
    for (let got = await claim(batchId, now, { slots: 2 }); got.length; got = await claim(batchId, now, { slots: 2 })) seen.push(...got.map((t) => t.key));
    return seen;
  };

  describe('claim order', () => {
    it('claims by priority (higher first), then rank (lower first), then key', async () => {
      const specs = [ranked('a', 5), ranked('b', -3), ranked('c', 0, 2), ranked('d', -3), ranked('e', 9, 2), ranked('f', -(2 ** 50))];
      const { batch } = await h.store.enqueue(newBatch(), specs);
      expect(await claimAll(batch.id, Date.now())).toEqual(['c', 'e', 'f', 'b', 'd', 'a']);
    });

    it('a due retry is claimed before never-tried tasks of any rank or priority', async () => {
      const { batch } = await h.store.enqueue(newBatch(), [ranked('slow', 0), ranked('big', -100, 50), ranked('small', 100)]);
      const now = Date.now();
      const [first] = await claim(batch.id, now);
      expect(first!.key).toBe('big');
      await h.store.settle([ending(first!, 'FAILED', now + 1, { retryAt: now + 10 })]);
      expect((await claim(batch.id, now + 5)).map((t) => t.key)).toEqual(['slow']);
      expect((await claim(batch.id, now + 20)).map((t) => t.key)).toEqual(['big']);
    });

    it('a re-enqueue with other ranks re-ranks the tasks that wait, and leaves the rest', async () => {
      const names = keys(4);
      const { batch } = await h.store.enqueue(newBatch(), names.map((k) => ranked(k, 0)));
      const now = Date.now();
      const [started] = await claim(batch.id, now);
      expect(started!.key).toBe('k000');
      // Reversed: k003 first now; k000 is RUNNING and keeps its row as it is.
      await h.store.enqueue(newBatch(), names.map((k, i) => ranked(k, -i)));
      expect(await claimAll(batch.id, now)).toEqual(['k003', 'k002', 'k001']);
      expect(await h.store.settle([ending(started!, 'SUCCESS', now + 1)])).toEqual([{ token: started!.token, status: 'SUCCESS' }]);
    });

    it('learnedWork: the learned durations of open and succeeded tasks, read from their ranks; none without', async () => {
      const specs = [ranked('slow', -LEARNED_RANK - 9000), ranked('a', -LEARNED_RANK - 100), ranked('b', -LEARNED_RANK - 300), ranked('new', -5000)];
      const { batch } = await h.store.enqueue(newBatch(), specs);
      expect(await h.store.learnedWork(batch.id)).toEqual({ openKnown: 3, openMs: 9400, doneKnown: 0, doneMs: 0 });
      const now = Date.now();
      const [first] = await claim(batch.id, now);
      expect(first!.key).toBe('slow');
      await h.store.settle([ending(first!, 'SUCCESS', now + 1)]);
      expect(await h.store.learnedWork(batch.id)).toEqual({ openKnown: 2, openMs: 400, doneKnown: 1, doneMs: 9000 });
      const { batch: plain } = await h.store.enqueue(newBatch('plain'), [spec('x')]);
      expect(await h.store.learnedWork(plain.id)).toEqual({ openKnown: 0, openMs: 0, doneKnown: 0, doneMs: 0 });
    });

    it('a --rerun-changed requeue takes the ranks of the run that requeues it', async () => {
      const { batch } = await h.store.enqueue(newBatch(), [ranked('a', 0), ranked('b', 0)]);
      const now = Date.now();
      const [a] = await claim(batch.id, now);
      await h.store.settle([ending(a!, 'SUCCESS', now + 1)]);
      // a's file changed; the rerun ranks it first by its new size.
      await h.store.enqueue(newBatch(), [{ ...ranked('a', -500), fingerprint: 'changed' }, ranked('b', 0)], { rerunChanged: true });
      expect(await claimAll(batch.id, now + 2)).toEqual(['a', 'b']);
    });

    it("rerank's patch sets only the fields it names in the stored definition, as it is then", async () => {
      const { batch } = await h.store.enqueue(newBatch(), [ranked('a', 0)]);
      const job = { ...batch.job, handler: { exec: 'newer' } };
      await h.store.updateJob(batch.id, job, 3);
      await h.store.rerank(batch.id, [], { order: 'size', priority: [{ glob: 'a', n: 1 }] });
      expect((await h.store.findBatch('batch'))!.job).toEqual({ ...job, order: 'size', priority: [{ glob: 'a', n: 1 }] });
    });

    it('learnedDurations: the median of each key\'s successes in every batch of the source, nothing of another source', async () => {
      const now = Date.now();
      /** A batch whose keys each succeed once in the given time; `failing` fails first (an attempt not learned). */
      const run = async (name: string, source: string, durations: Record<string, number>, failing?: string) => {
        const { batch } = await h.store.enqueue({ ...newBatch(name), source }, Object.keys(durations).map((k) => spec(k)));
        const got = await claim(batch.id, now, { slots: 9 });
        await h.store.settle(got.map((t) => (t.key === failing ? ending(t, 'FAILED', now + 1, { durationMs: 1e6, retryAt: now + 2 }) : ending(t, 'SUCCESS', now + 1, { durationMs: durations[t.key]! }))));
        if (failing) {
          const [again] = await claim(batch.id, now + 3);
          await h.store.settle([ending(again!, 'SUCCESS', now + 4, { durationMs: durations[failing]! })]);
        }
      };
      await run('night-1', '/data/logs', { a: 100, b: 10, c: 5 }, 'c');
      // Up to date: a success that ran nothing (0 ms) teaches nothing.
      await run('night-0', '/data/logs', { a: 0, b: 0 });
      await run('night-2', '/data/logs', { a: 300, b: 20 });
      await run('night-3', '/data/logs', { a: 200 });
      await run('other', '/data/elsewhere', { a: 99_999, z: 1 });
      const learned = await h.store.learnedDurations('/data/logs');
      expect(new Map([...learned].map(([k, v]) => [k, Math.round(v)]))).toEqual(
        new Map([
          [durationKey('', 'a'), 200],
          [durationKey('', 'b'), 15],
          [durationKey('', 'c'), 5],
        ]),
      );
      expect((await h.store.learnedDurations('/data/none')).size).toBe(0);
    });
  });
}
