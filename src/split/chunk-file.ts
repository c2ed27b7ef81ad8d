import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { basename } from 'node:path';
import type { TaskSpec } from '../store/task-store.js';

export type ChunkMode = { kind: 'bytes'; chunkSize: number } | { kind: 'lines'; lines: number };

const BLOCK = 1 << 20;
const NEWLINE = 0x0a;

/**
 * Line-aligned byte ranges [start, end) that tile the file exactly: every boundary
 * falls just after a `\n`, so each line belongs to one chunk. A line longer than a
 * chunk makes its chunk longer; a last line without `\n` ends the last chunk.
 *
 * With `sizes` (file-growth.ts: the file's size at each split that found it longer), each
 * segment between two sizes is tiled on its own and the indexes run on, so a file that grew
 * gets its old chunks back unchanged and new ones for the appended bytes only; such chunks
 * carry no fingerprint (the batch's stored hash decides whether the file is still theirs).
 * The last size ends at a newline unless the last line was taken without one (file-growth.ts),
 * so the bytes of a line still being written are in no chunk.
 * Without (a batch stored before sizes were kept), the whole file, fingerprinted.
 */
export function* chunkFile(path: string, mode: ChunkMode, sizes?: number[]): Generator<TaskSpec> {
  const fd = openSync(path, 'r');
  try {
    const stats = fstatSync(fd);
    const fingerprint = sizes ? null : `${stats.size}:${Math.trunc(stats.mtimeMs)}`;
    const name = basename(path);
    let index = 0;
    let start = 0;
    for (const to of sizes ?? [stats.size]) {
      const bounds = mode.kind === 'bytes' ? byteBounds(fd, start, to, mode.chunkSize) : lineBounds(fd, start, to, mode.lines);
      for (const end of bounds) {
        yield {
          key: `${name}:${String(index++).padStart(5, '0')}`,
          payload: { version: 1, path, rel: name, start, end },
          fingerprint,
        };
        start = end;
      }
      start = to;
    }
  } finally {
    closeSync(fd);
  }
}

/** Whether the file is one chunk as it is now (reads at most its first chunk's bytes). */
export function isOneChunk(path: string, mode: ChunkMode): boolean {
  const chunks = chunkFile(path, mode);
  try {
    chunks.next();
    return chunks.next().done === true;
  } finally {
    chunks.return(undefined);
  }
}

/** Chunk ends in [from, to) when cutting about every `chunkSize` bytes at the next newline. */
function* byteBounds(fd: number, from: number, to: number, chunkSize: number): Generator<number> {
  let start = from;
  while (start < to) {
    const newline = indexOfNewline(fd, start + chunkSize - 1, to);
    const end = newline < 0 ? to : newline + 1;
    yield end;
    start = end;
  }
}

/** Chunk ends in [from, to) after every `lines`-th newline (and at `to`). */
function* lineBounds(fd: number, from: number, to: number, lines: number): Generator<number> {
  const buf = Buffer.allocUnsafe(BLOCK);
  let seen = 0;
  let last = from;
  for (let pos = from; pos < to; ) {
    const n = readSync(fd, buf, 0, Math.min(BLOCK, to - pos), pos);
    if (n === 0) break;
    for (let i = buf.indexOf(NEWLINE, 0); i >= 0 && i < n; i = buf.indexOf(NEWLINE, i + 1)) {
      if (++seen % lines === 0) {
        last = pos + i + 1;
        yield last;
      }
    }
    pos += n;
  }
  if (last < to) yield to;
}

/** Position of the first `\n` at or after `from`, or -1. */
function indexOfNewline(fd: number, from: number, size: number): number {
  const buf = Buffer.allocUnsafe(64 * 1024);
  for (let pos = from; pos < size; ) {
    const n = readSync(fd, buf, 0, Math.min(buf.length, size - pos), pos);
    if (n === 0) return -1;
    const i = buf.subarray(0, n).indexOf(NEWLINE);
    if (i >= 0) return pos + i;
    pos += n;
  }
  return -1;
}
