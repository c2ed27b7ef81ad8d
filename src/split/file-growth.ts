/** Whether a chunked file is the one its batch split, or only grew at its end since (SPEC §3). */
import type { Hash } from 'node:crypto';
import { createHash } from '../crypto-on-use.js';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/**
 * What a batch knows of the file it chunked: the file's size at each split that found it
 * longer (its chunks tile each segment between two sizes), and the SHA-256 of its bytes up
 * to the last size. Stored on the batch; a re-run chunks the same segments again, so every
 * old chunk gets its old key and range back, and only the new segment's chunks are new.
 */
export interface FileState {
  sizes: number[];
  sha256: string;
}

export type Growth =
  | { kind: 'same'; state: FileState }
  /** `added` bytes appended after the old end (a line boundary): a new segment. */
  | { kind: 'grown'; state: FileState; added: number }
  /** Not the file that was split: the reason, for a person. */
  | { kind: 'changed'; why: string };

const BLOCK = 1 << 20;

/** The state of a file split for the first time. */
export function firstState(path: string): FileState {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const hash = createHash('sha256');
    hashRange(fd, hash, 0, size);
    return { sizes: [size], sha256: hash.digest('hex') };
  } finally {
    closeSync(fd);
  }
}

/**
 * Compares the file with what its batch stored: the same bytes (whatever its mtime says), the
 * same bytes followed by new ones after a newline, or anything else (shorter, an old byte
 * changed, or its last line extended, which a chunk already ran without).
 */
export function compareFile(path: string, stored: FileState): Growth {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const old = stored.sizes[stored.sizes.length - 1]!;
    if (size < old) return { kind: 'changed', why: `it is shorter than when it was split (${size} bytes, was ${old})` };
    const hash = createHash('sha256');
    hashRange(fd, hash, 0, old);
    if (hash.copy().digest('hex') !== stored.sha256) return { kind: 'changed', why: `its first ${old} bytes are not the ones that were split` };
    if (size === old) return { kind: 'same', state: stored };
    if (old > 0 && lastByte(fd, old) !== 0x0a) {
      return { kind: 'changed', why: 'its last line, which a chunk already ran, was extended (the file did not end with a newline when it was split)' };
    }
    hashRange(fd, hash, old, size);
    return { kind: 'grown', state: { sizes: [...stored.sizes, size], sha256: hash.digest('hex') }, added: size - old };
  } finally {
    closeSync(fd);
  }
}

function hashRange(fd: number, hash: Hash, from: number, to: number): void {
  const buf = Buffer.allocUnsafe(BLOCK);
  for (let pos = from; pos < to; ) {
    const n = readSync(fd, buf, 0, Math.min(BLOCK, to - pos), pos);
    if (n === 0) break;
    hash.update(buf.subarray(0, n));
    pos += n;
  }
}

function lastByte(fd: number, size: number): number {
  const b = Buffer.alloc(1);
  readSync(fd, b, 0, 1, size - 1);
  return b[0]!;
}
