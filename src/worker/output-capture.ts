import { closeSync, constants, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

export const TAIL_BYTES = 4096;

/**
 * Collects an attempt's output: the last 4 KiB in memory for the store, everything in
 * a log file that is created only when the first byte arrives. Writes are synchronous,
 * so a flooding process is slowed to disk speed instead of filling memory.
 */
export class OutputCapture {
  private tail: Buffer = Buffer.alloc(0);
  private fd: number | null = null;
  private failed = false;

  constructor(private readonly logFile: string) {}

  write(chunk: Buffer | string): void {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (buf.length === 0) return;
    this.tail =
      buf.length >= TAIL_BYTES
        ? Buffer.from(buf.subarray(buf.length - TAIL_BYTES))
        : Buffer.concat([this.tail, buf]).subarray(-TAIL_BYTES);
    this.toFile(buf);
  }

  private toFile(buf: Buffer): void {
    if (this.failed) return;
    try {
      if (this.fd === null) {
        mkdirSync(dirname(this.logFile), { recursive: true, mode: 0o700 });
        this.fd = createLog(this.logFile);
      }
      writeSync(this.fd, buf);
    } catch {
      // A full disk or unwritable log folder must not fail the task; the tail is still kept.
      this.failed = true;
    }
  }

  /** Closes the log file; returns the tail and the log's path (null when nothing was printed). */
  finish(): { outputTail: string | null; logPath: string | null } {
    if (this.fd !== null) closeSync(this.fd);
    const logPath = this.fd !== null ? this.logFile : null;
    this.fd = null;
    return { outputTail: this.tail.length ? this.tail.toString('utf8') : null, logPath };
  }
}

const NEW_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Creates the attempt's log new, 0600, never through a symlink and never appending to an
 * older file. Something already at its path (a stale file of a pruned attempt whose id was
 * reused, or a planted symlink) is unlinked, not followed, and the file created again once.
 */
function createLog(path: string): number {
  try {
    return openSync(path, NEW_FILE, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    unlinkSync(path);
    return openSync(path, NEW_FILE, 0o600);
  }
}
