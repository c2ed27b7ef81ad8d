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

/**
 * Bytes after the file's last newline that this split leaves for a later one: a line
 * without its newline may still be being written (a program's stdout to a file is written in
 * 4 KiB blocks that cut lines), and a chunk that ran it would have run part of a line.
 */
export interface LeftTail {
  bytes: number;
  /** How long ago the file last changed. */
  ageMs: number;
}

export type Growth =
  | { kind: 'same'; state: FileState; left: LeftTail | null }
  /** `added` bytes appended after the old end (a line boundary): a new segment. */
  | { kind: 'grown'; state: FileState; added: number; left: LeftTail | null }
  /** Not the file that was split: the reason, for a person. */
  | { kind: 'changed'; why: string };

/**
 * When a last line without a newline is a line: when the file has not changed for this
 * long, or when the run is told the file is finished (`--finished`). A writer that cut a line
 * and stayed quiet longer than this gets its partial line run, and the batch refused once
 * the line is completed; 10 minutes makes that rare and still takes a finished file's last
 * line on a nightly run.
 */
export const STILL_MS = 10 * 60_000;

export interface TailRule {
  /** The file is finished: its last line is taken whatever its age. */
  finished: boolean;
  now: number;
}

const BLOCK = 1 << 20;
const NEWLINE = 0x0a;

/** The state of a file split for the first time, up to the end of its last line. */
export function firstState(path: string, rule: TailRule): { state: FileState; left: LeftTail | null } {
  const fd = openSync(path, 'r');
  try {
    const stats = fstatSync(fd);
    const { end, left } = linesEnd(fd, 0, stats.size, stats.mtimeMs, rule);
    const hash = createHash('sha256');
    hashRange(fd, hash, 0, end);
    return { state: { sizes: [end], sha256: hash.digest('hex') }, left };
  } finally {
    closeSync(fd);
  }
}

/**
 * Compares the file with what its batch stored: the same bytes (whatever its mtime says), the
 * same bytes followed by new lines after a newline, or anything else (shorter, an old byte
 * changed, or its last line extended, which a chunk already ran without).
 */
export function compareFile(path: string, stored: FileState, rule: TailRule): Growth {
  const fd = openSync(path, 'r');
  try {
    const stats = fstatSync(fd);
    const size = stats.size;
    const old = stored.sizes[stored.sizes.length - 1]!;
    if (size < old) return { kind: 'changed', why: `it is shorter than when it was split (${size} bytes, was ${old})` };
    const hash = createHash('sha256');
    hashRange(fd, hash, 0, old);
    if (hash.copy().digest('hex') !== stored.sha256) return { kind: 'changed', why: `its first ${old} bytes are not the ones that were split` };
    if (size === old) return { kind: 'same', state: stored, left: null };
    if (old > 0 && lastByte(fd, old) !== NEWLINE) {
      return { kind: 'changed', why: 'its last line, which a chunk already ran, was extended (the file did not end with a newline when it was split)' };
    }
    const { end, left } = linesEnd(fd, old, size, stats.mtimeMs, rule);
    if (end === old) return { kind: 'same', state: stored, left };
    hashRange(fd, hash, old, end);
    return { kind: 'grown', state: { sizes: [...stored.sizes, end], sha256: hash.digest('hex') }, added: end - old, left };
  } finally {
    closeSync(fd);
  }
}

/**
 * Where this split ends in [from, size]: `size` when the file ends with a newline or its last
 * line is taken (TailRule), else just after the last newline (`from` when there is none).
 */
function linesEnd(fd: number, from: number, size: number, mtimeMs: number, rule: TailRule): { end: number; left: LeftTail | null } {
  if (size === from || lastByte(fd, size) === NEWLINE) return { end: size, left: null };
  const ageMs = Math.max(0, rule.now - mtimeMs);
  if (rule.finished || ageMs >= STILL_MS) return { end: size, left: null };
  const newline = lastNewline(fd, from, size);
  const end = newline < 0 ? from : newline + 1;
  return { end, left: { bytes: size - end, ageMs } };
}

/** Position of the last `\n` in [from, to), or -1. */
function lastNewline(fd: number, from: number, to: number): number {
  const buf = Buffer.allocUnsafe(64 * 1024);
  for (let hi = to; hi > from; ) {
    const lo = Math.max(from, hi - buf.length);
    const n = readSync(fd, buf, 0, hi - lo, lo);
    const i = buf.subarray(0, n).lastIndexOf(NEWLINE);
    if (i >= 0) return lo + i;
    hi = lo;
  }
  return -1;
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
