import { describe, expect, it } from 'vitest';
import { readItems } from '../../../src/split/items.js';
import { newBatch, type Harness } from './harness.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The TaskStore contract, items of a list (SPEC §3): keys are the items, each stored whole with its task. */
export function itemsContract(h: Harness): void {
  const { claim } = h;
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
