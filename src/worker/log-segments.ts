/**
 * Attempt logs gathered into a few files (SPEC §10, store/log-layout.ts): an attempt writes its
 * output to a file of its own while it runs (what `logs --follow` reads); once it has ended,
 * this worker process appends that file to its current segment in the same folder and removes
 * it, and the attempt records the range. A million attempts leave a few segments per worker
 * process, not a million files. Appends happen one at a time (the worker reports its attempts
 * in order), so a segment's bytes are one attempt's log after another.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { segmentFile, segmentRef } from '../store/log-layout.js';

/** A segment is closed and a new one begun past this size. */
const SEGMENT_MAX = 64 * 1024 * 1024;
/** A log bigger than this keeps its file: copying it would cost more than the file does. */
const OWN_FILE_ABOVE = 1024 * 1024;
/** Segments kept open at once (one per batch folder this process writes to). */
const OPEN_MAX = 4;

interface Segment {
  fd: number;
  path: string;
  size: number;
}

/** This process among every writer of segments: its pid and start, in letters and digits. */
const WRITER = `${process.pid.toString(36)}${Date.now().toString(36)}`;
const open = new Map<string, Segment>();
let serial = 0;

/**
 * Moves the ended attempt's log `file` into a segment; returns what the attempt records: the
 * segment's range, or `file` itself when it is too big to move, or when the move failed (a full
 * disk: the file stays whole, and nothing of it is recorded twice).
 */
export function intoSegment(file: string): string {
  try {
    return moved(file);
  } catch {
    return file; // whatever failed (a close on a network disk), the attempt keeps its own file
  }
}

function moved(file: string): string {
  let bytes: Buffer;
  try {
    const st = lstatSync(file);
    if (!st.isFile() || st.size === 0 || st.size > OWN_FILE_ABOVE) return file;
    bytes = readWhole(file, st.size);
  } catch {
    return file;
  }
  const folder = dirname(file);
  let seg: Segment | undefined;
  try {
    seg = segmentFor(folder, bytes.length);
    const offset = seg.size;
    for (let off = 0; off < bytes.length; ) off += writeSync(seg.fd, bytes, off);
    seg.size += bytes.length;
    unlinkSync(file);
    return segmentRef(seg.path, offset, bytes.length, basename(file));
  } catch {
    // What was appended of it is unreferenced bytes: the segment is given up, the file kept.
    if (seg) close(folder);
    return file;
  }
}

/** Whether the open segment is still the file at its path (not deleted by a prune, or by hand, since it was opened). */
function stillThere(seg: Segment): boolean {
  try {
    const open = fstatSync(seg.fd);
    const named = lstatSync(seg.path);
    return open.nlink > 0 && named.ino === open.ino && named.dev === open.dev;
  } catch {
    return false;
  }
}

function readWhole(file: string, size: number): Buffer {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const buf = Buffer.alloc(size);
    let got = 0;
    while (got < size) {
      const n = readSync(fd, buf, got, size - got, got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

/** The folder's open segment with room for `bytes` more, a new one otherwise (created, never reused). */
function segmentFor(folder: string, bytes: number): Segment {
  const current = open.get(folder);
  // A batch pruned and made again under the same name, while this process lives: a new segment.
  if (current && current.size + bytes <= SEGMENT_MAX && stillThere(current)) return current;
  if (current) close(folder);
  if (open.size >= OPEN_MAX) close(open.keys().next().value!);
  for (;;) {
    const path = segmentFile(folder, WRITER, ++serial);
    try {
      const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_APPEND | constants.O_NOFOLLOW, 0o600);
      const seg = { fd, path, size: fstatSync(fd).size };
      open.set(folder, seg);
      return seg;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}

function close(folder: string): void {
  const seg = open.get(folder);
  open.delete(folder);
  try {
    if (seg) closeSync(seg.fd);
  } catch {
    // Its bytes are written; a close that fails (a network disk) changes nothing recorded.
  }
}
