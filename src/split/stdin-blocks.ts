/** Stdin cut into line-aligned blocks (`run - --pipe --block SIZE`), each a task that holds its bytes (SPEC §3). */
import { isUtf8 } from 'node:buffer';
import { closeSync, openSync, readSync } from 'node:fs';
import { createHash } from '../crypto-on-use.js';
import { UsageError } from '../errors.js';
import { formatBytes } from '../stored-text.js';
import type { TaskSpec } from '../store/task-store.js';
import { chunkFile, type ChunkMode } from './chunk-file.js';
import { MAX_ITEM_BYTES } from './list-lines.js';

/** The default `--block`, as GNU parallel's `--pipe`. */
export const DEFAULT_BLOCK = 1024 * 1024;

/**
 * The most bytes one block may have: a block is stored with its task, read back and handed to
 * a worker on every attempt, as an item is (list-lines.ts), so it has an item's limit.
 */
export const MAX_BLOCK_BYTES = MAX_ITEM_BYTES;

/**
 * The blocks of stdin, spooled to `path` (stdin-spool.ts): cut as a file's chunks are
 * (chunk-file.ts: about `mode.chunkSize` bytes, ended just after a newline, or every
 * `mode.lines` lines), so every line is in exactly one block and a line longer than a block
 * makes its block longer; the last block ends at the end of the stream, newline or not.
 *
 * A block's key is its position and a hash of its bytes (`stdin:00003:9f86d081884c7d65`):
 * the same stream run again gives the same keys (nothing runs again), an edited one new keys
 * for the blocks whose bytes changed only, and two equal blocks stay two tasks. The bytes are
 * in the payload, so a resume, a retry or a worker on another machine needs no stdin.
 * Memory holds one block. A block over MAX_BLOCK_BYTES is exit 2 before anything is written.
 */
export function* readBlocks(path: string, mode: ChunkMode): Generator<TaskSpec> {
  const fd = openSync(path, 'r');
  let index = 0;
  try {
    for (const chunk of chunkFile(path, mode)) {
      const start = chunk.payload.start!;
      const end = chunk.payload.end!;
      if (end - start > MAX_BLOCK_BYTES) tooBig(start, end, mode);
      const bytes = readRange(fd, start, end);
      const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
      const text = isUtf8(bytes) ? bytes.toString('utf8') : null;
      yield {
        key: `stdin:${String(index++).padStart(5, '0')}:${hash}`,
        payload: { version: 1, path: '-', rel: '-', start, end, ...(text !== null ? { block: text } : { block: bytes.toString('base64'), base64: true as const }) },
        fingerprint: null,
      };
    }
  } finally {
    closeSync(fd);
  }
}

function readRange(fd: number, start: number, end: number): Buffer {
  const buf = Buffer.allocUnsafe(end - start);
  let got = 0;
  while (got < buf.length) {
    const n = readSync(fd, buf, got, buf.length - got, start + got);
    if (n === 0) break; // the spool is ours and does not shrink; a short read ends the block
    got += n;
  }
  return buf.subarray(0, got);
}

function tooBig(start: number, end: number, mode: ChunkMode): never {
  const why = mode.kind === 'lines' ? `its ${mode.lines} lines are` : 'a line longer than --block makes it';
  throw new UsageError(
    `stdin, the block at byte ${start}: ${why} ${end - start} bytes, over ${formatBytes(MAX_BLOCK_BYTES)}, the limit of one block; ` +
      `save the stream to a file and run it in chunks (run FILE --pipe --chunk-size 64MiB)${mode.kind === 'lines' ? ', or give fewer --lines' : ''}`,
  );
}
