import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors.js';
import { MAX_BLOCK_BYTES, readBlocks } from '../../src/split/stdin-blocks.js';
import type { ChunkMode } from '../../src/split/chunk-file.js';
import type { TaskSpec } from '../../src/store/task-store.js';

/** `run - --pipe`: stdin (as spooled) in line-aligned blocks, each holding its bytes, keyed by position and hash. */

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sd-blocks-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function spool(content: string | Buffer, name = 'items'): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

const bytes = (chunkSize: number): ChunkMode => ({ kind: 'bytes', chunkSize });
const blocks = (path: string, mode: ChunkMode): TaskSpec[] => [...readBlocks(path, mode)];
const data = (s: TaskSpec): Buffer => Buffer.from(s.payload.block!, s.payload.base64 ? 'base64' : 'utf8');

describe('readBlocks', () => {
  it('tiles the stream: every line in exactly one block, each block ending after a newline, the bytes in the payload', () => {
    const text = Array.from({ length: 5000 }, (_, i) => `line ${i}${i % 7 === 0 ? '' : ' some more words'}`).join('\n') + '\n';
    const specs = blocks(spool(text), bytes(4096));
    expect(specs.length).toBeGreaterThan(10);
    expect(Buffer.concat(specs.map(data)).toString()).toBe(text);
    for (const s of specs) {
      expect(data(s).at(-1)).toBe(0x0a);
      expect(data(s).length).toBe(s.payload.end! - s.payload.start!);
      expect(s.payload).toMatchObject({ version: 1, path: '-', rel: '-' });
      expect(s.fingerprint).toBeNull();
    }
    expect(specs.map((s) => s.key.split(':').slice(0, 2).join(':'))).toEqual(specs.map((_, i) => `stdin:${String(i).padStart(5, '0')}`));
  });

  it('keys by position and content: the same stream gives the same keys, equal blocks stay two tasks, an edit changes only its block', () => {
    const line = (i: number) => `${String(i).padStart(9, '0')}\n`; // 10 bytes a line
    const lines = Array.from({ length: 100 }, (_, i) => line(i));
    const first = blocks(spool(lines.join('')), bytes(100)).map((s) => s.key);
    expect(first).toHaveLength(10);
    expect(blocks(spool(lines.join(''), 'again'), bytes(100)).map((s) => s.key)).toEqual(first);

    const edited = [...lines];
    edited[35] = 'x'.repeat(9) + '\n'; // same length: the other blocks keep their bytes
    const keys = blocks(spool(edited.join(''), 'edited'), bytes(100)).map((s) => s.key);
    expect(keys.filter((k) => !first.includes(k))).toEqual([keys[3]]);

    const same = blocks(spool('a\n'.repeat(200), 'same'), bytes(100));
    expect(new Set(same.map((s) => s.key)).size).toBe(same.length);
  });

  it('a line longer than a block makes its block longer; a last line without a newline ends the last block', () => {
    const long = 'y'.repeat(10_000);
    const specs = blocks(spool(`a\n${long}\nb\nc`), bytes(100));
    expect(specs.map((s) => data(s).toString())).toEqual([`a\n${long}\n`, 'b\nc']);
  });

  it('--lines N: blocks of N lines', () => {
    const specs = blocks(spool('1\n2\n3\n4\n5\n'), { kind: 'lines', lines: 2 });
    expect(specs.map((s) => data(s).toString())).toEqual(['1\n2\n', '3\n4\n', '5\n']);
  });

  it('keeps bytes that are not UTF-8 exactly (base64)', () => {
    const raw = Buffer.from([0x61, 0xff, 0xfe, 0x0a, 0x62, 0x0a]);
    const [spec] = blocks(spool(raw), bytes(1024));
    expect(spec!.payload.base64).toBe(true);
    expect(data(spec!)).toEqual(raw);
  });

  it('a block over the limit of one block is exit 2, naming where it starts', () => {
    const path = spool(Buffer.concat([Buffer.from('a\n'), Buffer.alloc(MAX_BLOCK_BYTES + 1, 0x7a), Buffer.from('\n')]));
    expect(() => blocks(path, bytes(1024))).toThrow(UsageError);
    expect(() => blocks(path, bytes(1024))).toThrow(/stdin, the block at byte 0: a line longer than --block makes it 16777220 bytes, over 16 MiB, the limit of one block/);
  });
});
