import { describe, expect, it } from 'vitest';
import { readItems } from '../../../src/split/items.js';
import { ending, newBatch, type Harness } from './harness.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The TaskStore contract, items of a list (SPEC §3): keys are the items, each stored whole with its task. */
export function itemsContract(h: Harness): void {
  const { claim, task } = h;
  const listOf = (bytes: Buffer, format: 'lines' | 'jsonl' = 'lines', keyField: string | null = null) => {
    const path = join(mkdtempSync(join(tmpdir(), 'sd-items-')), 'list');
    writeFileSync(path, bytes);
    return [...readItems(path, path, { format, keyField, colsep: format === 'lines' ? ',' : null })];
  };

  describe('items', () => {
    it('a repeated item is one task, and the enqueue counts the repeats when asked', async () => {
      const specs = listOf(Buffer.from('a\nb\na\na\nc\n'));
      const r = await h.store.enqueue(newBatch('list'), specs, { countRepeated: true });
      expect(r).toMatchObject({ inserted: 3, repeated: 2 });
      const again = await h.store.enqueue(newBatch('list'), listOf(Buffer.from('d\na\n')), { countRepeated: true });
      expect(again).toMatchObject({ inserted: 1, repeated: 0 });
      expect((await h.store.enqueue(newBatch('list'), specs)).repeated).toBe(0);
    });

    it('hostile items (quotes, a NUL, a newline inside JSON, 10 KB, invalid UTF-8) come back from a claim exactly', async () => {
      const long = 'y'.repeat(10 * 1024);
      const lines = listOf(Buffer.concat([Buffer.from(`it's "$(x)"\n-n\na\0b\n${long}\nü,🙂\n`), Buffer.from([0xff, 0x41, 0x0a])]));
      const records = listOf(Buffer.from('{"id":"r1","text":"two\\nlines"}\n{"id":7}\n'), 'jsonl', 'id');
      const r = await h.store.enqueue(newBatch('hostile', 1), [...lines, ...records]);
      expect(r.inserted).toBe(8);
      const claimed = await claim(r.batch.id, Date.now(), { slots: 8 });
      const byKey = new Map(claimed.map((t) => [t.key, t.payload]));
      expect(byKey.get(`it's "$(x)"`)).toMatchObject({ item: `it's "$(x)"`, colsep: ',' });
      expect(byKey.get('-n')!.item).toBe('-n');
      expect([...byKey.values()].find((p) => p.item === 'a\0b')).toBeDefined();
      expect([...byKey.values()].find((p) => p.item === long)).toBeDefined();
      const bad = [...byKey.values()].find((p) => p.bytes !== undefined)!;
      expect(Buffer.from(bad.bytes!, 'base64')).toEqual(Buffer.from([0xff, 0x41]));
      expect(byKey.get('r1')).toMatchObject({ item: '{"id":"r1","text":"two\\nlines"}', record: { id: 'r1', text: 'two\nlines' } });
      expect(byKey.get('7')!.record).toEqual({ id: 7 });
      expect(claimed.every((t) => t.key.length <= 200 && !t.key.includes('\0'))).toBe(true);
    });

    it('a record the list changed keeps its stored payload and is counted, whatever its status; rerunChanged puts the new one in', async () => {
      const jsonl = (lines: string[]) => listOf(Buffer.from(lines.join('\n') + '\n'), 'jsonl', 'id');
      const v1 = ['{"id":1,"v":"a"}', '{"id":2,"v":"a"}', '{"id":3,"v":"a"}', '{"id":4,"v":"a"}'];
      const first = await h.store.enqueue(newBatch('recs', 2), jsonl(v1), { itemPayloads: true });
      expect(first).toMatchObject({ inserted: 4, changed: 0, changedExample: null });
      const id = first.batch.id;
      const now = Date.now();
      const [t1, t2, t3] = await claim(id, now, { slots: 3 });
      await h.store.settle([ending(t1!, 'SUCCESS', now + 1, { result: '"one"' }), ending(t2!, 'FAILED', now + 1)]);
      // 1 succeeded, 2 failed, 3 runs, 4 waits; the list edits 1, 2 and 3, reorders the fields of 4 and repeats 1.
      const v2 = ['{"v":"a","id":4}', '{"id":3,"v":"b"}', '{"id":2,"v":"b"}', '{"id":1,"v":"b"}', '{"id":1,"v":"c"}'];
      const seen = await h.store.enqueue(newBatch('recs', 2), jsonl(v2), { itemPayloads: true, countRepeated: true });
      expect(seen).toMatchObject({ inserted: 0, changed: 3, changedExample: '1', requeued: 0, repeated: 1 });
      expect(await task(id, '1')).toMatchObject({ status: 'SUCCESS', result: '"one"', payload: { record: { id: 1, v: 'a' } } });
      expect(await task(id, '2')).toMatchObject({ status: 'FAILED', attempts: 1, payload: { record: { id: 2, v: 'a' } } });
      // The same list again: still changed, nothing moved.
      expect(await h.store.enqueue(newBatch('recs', 2), jsonl(v2), { itemPayloads: true })).toMatchObject({ changed: 3, requeued: 0 });

      const rerun = await h.store.enqueue(newBatch('recs', 2), jsonl(v2), { itemPayloads: true, rerunChanged: true });
      // The RUNNING one is left to its attempt, and still counts as changed.
      expect(rerun).toMatchObject({ requeued: 2, changed: 1, changedExample: '3' });
      expect(await task(id, '1')).toMatchObject({ status: 'PENDING', attempts: 0, result: null, payload: { item: '{"id":1,"v":"b"}', record: { id: 1, v: 'b' } } });
      // Marked: it runs even where its declared output is in place (an item's output does not say which record made it).
      expect((await task(id, '1'))!.payload.rerun).toBe(true);
      expect((await task(id, '4'))!.payload.rerun).toBeUndefined();
      expect(await task(id, '2')).toMatchObject({ status: 'PENDING', attempts: 0, payload: { record: { id: 2, v: 'b' } } });
      expect(await task(id, '3')).toMatchObject({ status: 'RUNNING', payload: { record: { id: 3, v: 'a' } } });
      expect(await task(id, '4')).toMatchObject({ status: 'PENDING', payload: { item: '{"id":4,"v":"a"}' } });
      await h.store.settle([ending(t3!, 'SUCCESS', now + 2)]);
      expect(await h.store.enqueue(newBatch('recs', 2), jsonl(v2), { itemPayloads: true, rerunChanged: true })).toMatchObject({ requeued: 1, changed: 0 });
      // Attempt numbers go on counting; the budget starts over.
      const again = await claim(id, now + 10, { slots: 4 });
      expect(again.map((t) => [t.key, t.attempt, t.counted, (t.payload.record as { v: string }).v]).sort()).toEqual([
        ['1', 2, 1, 'b'],
        ['2', 2, 1, 'b'],
        ['3', 2, 1, 'b'],
        ['4', 1, 1, 'a'],
      ]);
    });

    it('rerunChanged leaves an item whole while one of its stage tasks runs, so no stage runs on the new record after one on the old', async () => {
      const staged = (lines: string[]) =>
        listOf(Buffer.from(lines.join('\n') + '\n'), 'jsonl', 'id').flatMap((s) => [
          { ...s, key: `a/${s.key}`, stage: 'a', item: s.key, needs: [] },
          { ...s, key: `b/${s.key}`, stage: 'b', item: s.key, needs: ['a'] },
        ]);
      const first = await h.store.enqueue(newBatch('staged'), staged(['{"id":1,"v":"a"}', '{"id":2,"v":"a"}']), { itemPayloads: true });
      const id = first.batch.id;
      const now = Date.now();
      const running = (await claim(id, now, { slots: 4 })).filter((t) => t.stage === 'a');
      expect(running.map((t) => t.key).sort()).toEqual(['a/1', 'a/2']);
      await h.store.settle([ending(running.find((t) => t.key === 'a/2')!, 'SUCCESS', now + 1)]);
      // Both records edited: a/1 still runs, so item 1 waits whole; item 2 is re-queued whole.
      const v2 = ['{"id":1,"v":"b"}', '{"id":2,"v":"b"}'];
      const rerun = await h.store.enqueue(newBatch('staged'), staged(v2), { itemPayloads: true, rerunChanged: true });
      expect(rerun).toMatchObject({ requeued: 2, changed: 1, changedExample: '1' });
      expect(await task(id, 'b/1')).toMatchObject({ status: 'PENDING', payload: { record: { id: 1, v: 'a' } } });
      expect(await task(id, 'a/2')).toMatchObject({ status: 'PENDING', payload: { record: { id: 2, v: 'b' } } });
      expect(await task(id, 'b/2')).toMatchObject({ status: 'PENDING', payload: { record: { id: 2, v: 'b' } } });
      // Once a/1 ends, the next rerun takes item 1 whole.
      await h.store.settle([ending(running.find((t) => t.key === 'a/1')!, 'SUCCESS', now + 2)]);
      expect(await h.store.enqueue(newBatch('staged'), staged(v2), { itemPayloads: true, rerunChanged: true })).toMatchObject({ requeued: 2, changed: 0 });
      expect(await task(id, 'a/1')).toMatchObject({ status: 'PENDING', payload: { record: { id: 1, v: 'b' } } });
    });

    it('a record stored by an older version (no fingerprint) takes the list\'s when its line is the same, else counts as changed', async () => {
      const jsonl = (lines: string[]) => listOf(Buffer.from(lines.join('\n') + '\n'), 'jsonl', 'id');
      const old = jsonl(['{"id":1}', '{"id":2}']).map((s) => ({ ...s, fingerprint: null }));
      const id = (await h.store.enqueue(newBatch('old'), old, { itemPayloads: true })).batch.id;
      expect(await h.store.enqueue(newBatch('old'), jsonl(['{"id":1}', '{"id":2,"v":1}']), { itemPayloads: true })).toMatchObject({ changed: 1, changedExample: '2' });
      expect(await task(id, '1')).toMatchObject({ fingerprint: jsonl(['{"id":1}'])[0]!.fingerprint });
      // Back as it was stored: nothing changed.
      expect(await h.store.enqueue(newBatch('old'), jsonl(['{"id":1}', '{"id":2}']), { itemPayloads: true })).toMatchObject({ changed: 0 });
    });

    it("a file source's sizes and hash are stored with the batch's definition and read back", async () => {
      const job = { ...newBatch('f').job, split: { include: [], exclude: [], chunkSize: 10, lines: null, file: { sizes: [10, 25], sha256: 'ab'.repeat(32) } } };
      const r = await h.store.enqueue({ ...newBatch('f'), job }, []);
      expect((await h.store.findBatch('f'))!.job).toEqual(job);
      const grown = { ...job, split: { ...job.split, file: { sizes: [10, 25, 40], sha256: 'cd'.repeat(32) } } };
      await h.store.updateJob(r.batch.id, grown, 3);
      expect((await h.store.findBatch('f'))!.job).toEqual(grown);
    });
  });
}
