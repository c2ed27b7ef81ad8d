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
 */
export function* chunkFile(path: string, mode: ChunkMode): Generator<TaskSpec> {
  const fd = openSync(path, 'r');
  try {
    const stats = fstatSync(fd);
    const fingerprint = `${stats.size}:${Math.trunc(stats.mtimeMs)}`;
    const name = basename(path);
    const bounds = mode.kind === 'bytes' ? byteBounds(fd, stats.size, mode.chunkSize) : lineBounds(fd, stats.size, mode.lines);
    let index = 0;
    let start = 0;
    for (const end of bounds) {
      yield {
        key: `${name}:${String(index++).padStart(5, '0')}`,
        payload: { version: 1, path, rel: name, start, end },
        fingerprint,
      };
      start = end;
    }
  } finally {
    closeSync(fd);
  }
}

/** Chunk ends when cutting about every `chunkSize` bytes at the next newline. */
function* byteBounds(fd: number, size: number, chunkSize: number): Generator<number> {
  let start = 0;
  while (start < size) {
    const newline = indexOfNewline(fd, start + chunkSize - 1, size);
    const end = newline < 0 ? size : newline + 1;
    yield end;
    start = end;
  }
}

/** Chunk ends after every `lines`-th newline (and at the end of the file). */
function* lineBounds(fd: number, size: number, lines: number): Generator<number> {
  const buf = Buffer.allocUnsafe(BLOCK);
  let seen = 0;
  let last = 0;
  for (let pos = 0; pos < size; ) {
    const n = readSync(fd, buf, 0, Math.min(BLOCK, size - pos), pos);
    if (n === 0) break;
    for (let i = buf.indexOf(NEWLINE, 0); i >= 0 && i < n; i = buf.indexOf(NEWLINE, i + 1)) {
      if (++seen % lines === 0) {
        last = pos + i + 1;
        yield last;
      }
    }
    pos += n;
  }
  if (last < size) yield size;
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
