import { describe, expect, it } from 'vitest';
import { stagingChunks } from '../../src/store/shared/staging-chunks.js';
import type { TaskSpec } from '../../src/store/task-store.js';

/** An enqueue stages specs a chunk at a time: bounded in rows and in payload bytes (blocks of stdin are up to 16 MiB each). */

const spec = (i: number, size: number): TaskSpec => ({ key: `k${i}`, payload: { version: 1, path: '-', rel: '-', block: 'x'.repeat(size) }, fingerprint: null });

describe('stagingChunks', () => {
  it('ends a chunk at the row bound or the byte bound, whichever comes first, and keeps every spec once, in order', () => {
    const small = [...stagingChunks(Array.from({ length: 12 }, (_, i) => spec(i, 10)), 5, 1 << 20)];
    expect(small.map((c) => c.length)).toEqual([5, 5, 2]);
    const big = [...stagingChunks(Array.from({ length: 10 }, (_, i) => spec(i, 1000)), 5000, 3000)];
    expect(big.map((c) => c.length)).toEqual([3, 3, 3, 1]);
    expect(big.flat().map((s) => s.spec.key)).toEqual(Array.from({ length: 10 }, (_, i) => `k${i}`));
    expect(JSON.parse(big[0]![0]!.payload)).toEqual(spec(0, 1000).payload);
  });
});
