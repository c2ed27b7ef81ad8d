import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chunkFile, type ChunkMode } from '../../src/split/chunk-file.js';
import type { TaskSpec } from '../../src/store/task-store.js';
import { prng } from '../reliability/prng.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sd-chunk-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function write(name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

const bytes = (chunkSize: number): ChunkMode => ({ kind: 'bytes', chunkSize });
const lines = (n: number): ChunkMode => ({ kind: 'lines', lines: n });
const chunks = (path: string, mode: ChunkMode): TaskSpec[] => [...chunkFile(path, mode)];
const ranges = (specs: TaskSpec[]) => specs.map((s) => [s.payload.start, s.payload.end]);

/** The tiling and line-alignment invariants every split must satisfy. */
function expectTiles(specs: TaskSpec[], content: Buffer): void {
  const size = content.length;
  if (size === 0) {
    expect(specs).toHaveLength(0);
    return;
  }
  expect(specs.length).toBeGreaterThan(0);
  expect(specs[0]!.payload.start).toBe(0);
  expect(specs.at(-1)!.payload.end).toBe(size);
  for (let i = 0; i < specs.length; i++) {
    const { start, end } = specs[i]!.payload;
    expect(typeof start).toBe('number');
    expect(typeof end).toBe('number');
    expect(end!).toBeGreaterThan(start!);
    if (i > 0) expect(start).toBe(specs[i - 1]!.payload.end);
    // every boundary except the end of file falls just after a newline
    if (end !== size) expect(content[end! - 1]).toBe(0x0a);
  }
}

/** Lines in each chunk (a final line without newline counts as one). */
function linesPerChunk(specs: TaskSpec[], content: Buffer): number[] {
  return specs.map((s) => {
    const part = content.subarray(s.payload.start!, s.payload.end!).toString('latin1');
    const n = part.split('\n').length - 1;
    return part.endsWith('\n') ? n : n + 1;
  });
}

describe('chunkFile (bytes mode)', () => {
  for (const seed of [1, 42, 1337, 20250101, 0xdeadbeef]) {
    it(`tiles random line lengths exactly, line-aligned (seed ${seed})`, () => {
      const rnd = prng(seed);
      const parts: string[] = [];
      const lineCount = 200 + Math.floor(rnd() * 800);
      for (let i = 0; i < lineCount; i++) {
        const len = rnd() < 0.05 ? Math.floor(rnd() * 3000) : Math.floor(rnd() * 120);
        parts.push('x'.repeat(len) + '\n');
      }
      if (rnd() < 0.5) parts.push('tail-without-newline');
      const content = Buffer.from(parts.join(''));
      const path = write('random.txt', content);
      for (const chunkSize of [1, 7, 64, 1000, 4096, content.length, content.length * 2]) {
        const specs = chunks(path, bytes(chunkSize));
        expectTiles(specs, content);
        // every chunk reaches at least chunkSize bytes, except the last
        for (const s of specs.slice(0, -1)) expect(s.payload.end! - s.payload.start!).toBeGreaterThanOrEqual(chunkSize);
        // the whole file is covered, byte for byte
        const joined = Buffer.concat(specs.map((s) => content.subarray(s.payload.start!, s.payload.end!)));
        expect(joined.equals(content)).toBe(true);
      }
    });
  }

  it('cuts at the first newline at or after chunkSize bytes', () => {
    // lines of 10 bytes: "123456789\n"
    const content = Buffer.from('123456789\n'.repeat(5));
    const path = write('ten.txt', content);
    expect(ranges(chunks(path, bytes(10)))).toEqual([[0, 10], [10, 20], [20, 30], [30, 40], [40, 50]]);
    expect(ranges(chunks(path, bytes(11)))).toEqual([[0, 20], [20, 40], [40, 50]]);
    expect(ranges(chunks(path, bytes(25)))).toEqual([[0, 30], [30, 50]]);
  });

  it('keeps CRLF lines whole: boundaries fall after \\n, never between \\r and \\n', () => {
    const content = Buffer.from(Array.from({ length: 100 }, (_, i) => `line ${i}\r\n`).join(''));
    const path = write('crlf.txt', content);
    for (const chunkSize of [1, 5, 8, 9, 10, 64]) {
      const specs = chunks(path, bytes(chunkSize));
      expectTiles(specs, content);
      for (const s of specs) {
        const text = content.subarray(s.payload.start!, s.payload.end!).toString();
        expect(text.endsWith('\r\n')).toBe(true);
        expect(text.startsWith('\n')).toBe(false);
      }
    }
  });

  it('ends the last chunk at the end of a file without a final newline', () => {
    const content = Buffer.from('aaaa\nbbbb\ncccc');
    const path = write('nofinal.txt', content);
    const specs = chunks(path, bytes(3));
    expectTiles(specs, content);
    expect(ranges(specs)).toEqual([[0, 5], [5, 10], [10, 14]]);
  });

  it('makes a chunk longer when a line is longer than the chunk size', () => {
    const long = 'L'.repeat(10_000);
    const content = Buffer.from(`a\n${long}\nb\n`);
    const path = write('long.txt', content);
    const specs = chunks(path, bytes(100));
    expectTiles(specs, content);
    expect(ranges(specs)).toEqual([[0, 10_003], [10_003, 10_005]]);
    // a file that is one long line without newline is one chunk
    const one = write('oneline.txt', long);
    expect(ranges(chunks(one, bytes(100)))).toEqual([[0, 10_000]]);
  });

  it('yields zero chunks for an empty file', () => {
    const path = write('empty.txt', '');
    expect(chunks(path, bytes(1024))).toEqual([]);
    expect(chunks(path, lines(10))).toEqual([]);
  });

  it('yields a single chunk for a file that fits in one chunk', () => {
    const content = Buffer.from('one\ntwo\nthree\n');
    const path = write('small.log', content);
    const specs = chunks(path, bytes(1024));
    expect(specs).toHaveLength(1);
    expect(specs[0]!.key).toBe('small.log:00000');
    expect(specs[0]!.payload).toEqual({ version: 1, path, rel: 'small.log', start: 0, end: content.length });
    // exactly chunkSize bytes ending in a newline: still one chunk
    expect(ranges(chunks(path, bytes(content.length)))).toEqual([[0, content.length]]);
  });

  it('a file containing only newlines tiles line by line', () => {
    const content = Buffer.from('\n\n\n\n');
    const path = write('nl.txt', content);
    expect(ranges(chunks(path, bytes(1)))).toEqual([[0, 1], [1, 2], [2, 3], [3, 4]]);
  });

  it('numbers keys name:00000, name:00001, … after the basename', () => {
    const content = Buffer.from(Array.from({ length: 12 }, (_, i) => `row-${i}\n`).join(''));
    const path = write('data.csv', content);
    const specs = chunks(path, bytes(1));
    expect(specs.map((s) => s.key)).toEqual(Array.from({ length: 12 }, (_, i) => `data.csv:${String(i).padStart(5, '0')}`));
    for (const s of specs) {
      expect(s.payload.path).toBe(path);
      expect(s.payload.rel).toBe('data.csv');
      expect(s.payload.version).toBe(1);
    }
  });

  it('gives every chunk the fingerprint size:mtimeMs of the file', () => {
    const path = write('fp.txt', 'a\nb\n');
    const when = new Date('2024-05-06T07:08:09.000Z');
    utimesSync(path, when, when);
    const st = statSync(path);
    for (const s of chunks(path, bytes(1))) expect(s.fingerprint).toBe(`${st.size}:${Math.trunc(st.mtimeMs)}`);
  });

  it('is deterministic: the same file gives the same chunks', () => {
    const rnd = prng(7);
    const content = Buffer.from(Array.from({ length: 500 }, () => 'y'.repeat(Math.floor(rnd() * 80)) + '\n').join(''));
    const path = write('det.txt', content);
    expect(chunks(path, bytes(333))).toEqual(chunks(path, bytes(333)));
  });

  it('tiles a ~50 MB file split with chunkSize 1 MiB', () => {
    const path = join(dir, 'big.log');
    const rnd = prng(50);
    // Build a 1 MiB block of random-length lines once, write it 50 times with a varying prefix
    // so the newlines do not fall on the same offsets in every MiB.
    const blockParts: string[] = [];
    let blockLen = 0;
    while (blockLen < 1 << 20) {
      const line = 'z'.repeat(Math.floor(rnd() * 200)) + '\n';
      blockParts.push(line);
      blockLen += line.length;
    }
    const block = Buffer.from(blockParts.join(''));
    const fd = openSync(path, 'w');
    try {
      for (let i = 0; i < 50; i++) {
        writeSync(fd, Buffer.from('p'.repeat(i * 37) + '\n'));
        writeSync(fd, block);
      }
      writeSync(fd, Buffer.from('last line without newline'));
    } finally {
      closeSync(fd);
    }
    const size = statSync(path).size;
    expect(size).toBeGreaterThan(50 * (1 << 20));
    const specs = chunks(path, bytes(1 << 20));
    expect(specs.length).toBeGreaterThanOrEqual(49);
    expect(specs.length).toBeLessThanOrEqual(51);
    const content = readFileSync(path);
    expectTiles(specs, content);
    for (const s of specs.slice(0, -1)) {
      const len = s.payload.end! - s.payload.start!;
      expect(len).toBeGreaterThanOrEqual(1 << 20);
      expect(len).toBeLessThan((1 << 20) + 400); // lines are < 400 bytes
    }
    expect(specs.at(-1)!.key).toBe(`big.log:${String(specs.length - 1).padStart(5, '0')}`);
  });
});

describe('chunkFile (--lines N)', () => {
  for (const seed of [3, 99, 31337]) {
    it(`holds exactly N lines per chunk except the last (seed ${seed})`, () => {
      const rnd = prng(seed);
      const total = 1 + Math.floor(rnd() * 2000);
      const parts = Array.from({ length: total }, () => 'w'.repeat(Math.floor(rnd() * 50)) + (rnd() < 0.3 ? '\r\n' : '\n'));
      const content = Buffer.from(parts.join(''));
      const path = write('lines.txt', content);
      for (const n of [1, 2, 3, 10, 97, total, total + 5]) {
        const specs = chunks(path, lines(n));
        expectTiles(specs, content);
        const counts = linesPerChunk(specs, content);
        expect(specs).toHaveLength(Math.ceil(total / n));
        for (const c of counts.slice(0, -1)) expect(c).toBe(n);
        expect(counts.at(-1)).toBe(total - n * (specs.length - 1));
      }
    });
  }

  it('counts a last line without newline in the last chunk', () => {
    const content = Buffer.from('1\n2\n3\n4\n5');
    const path = write('l.txt', content);
    expect(ranges(chunks(path, lines(2)))).toEqual([[0, 4], [4, 8], [8, 9]]);
    expect(ranges(chunks(path, lines(5)))).toEqual([[0, 9]]);
  });

  it('does not yield an empty trailing chunk when the file ends exactly after the Nth line', () => {
    const content = Buffer.from('1\n2\n3\n4\n');
    const path = write('l.txt', content);
    expect(ranges(chunks(path, lines(2)))).toEqual([[0, 4], [4, 8]]);
  });

  it('handles line boundaries across the 1 MiB read blocks', () => {
    // lines of 1000 bytes over ~3 MiB: newlines straddle read-block boundaries
    const line = 'q'.repeat(999) + '\n';
    const total = 3200;
    const content = Buffer.from(line.repeat(total));
    const path = write('blocks.txt', content);
    const specs = chunks(path, lines(1000));
    expectTiles(specs, content);
    expect(ranges(specs)).toEqual([
      [0, 1_000_000],
      [1_000_000, 2_000_000],
      [2_000_000, 3_000_000],
      [3_000_000, 3_200_000],
    ]);
    expect(specs.map((s) => s.key)).toEqual(['blocks.txt:00000', 'blocks.txt:00001', 'blocks.txt:00002', 'blocks.txt:00003']);
  });
});
