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
  /** Why the log could not be written (a full disk, an unwritable folder), once it could not. */
  private failure: string | null = null;
  private written = 0;

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
    if (this.failure !== null) return;
    try {
      if (this.fd === null) {
        mkdirSync(dirname(this.logFile), { recursive: true, mode: 0o700 });
        this.fd = createLog(this.logFile);
      }
      for (let off = 0; off < buf.length; ) off += writeSync(this.fd, buf, off);
      this.written += buf.length;
    } catch (err) {
      // A full disk or unwritable log folder must not fail the task; the tail is still kept,
      // and says why the log is missing or cut short.
      this.failure = (err as Error).message;
    }
  }

  /**
   * Closes the log file; returns the tail, the log's path (null when nothing was printed, or
   * nothing of it could be written), and `note`: why the log is missing or cut short.
   */
  finish(): { outputTail: string | null; logPath: string | null; note: string | null } {
    if (this.fd !== null) closeSync(this.fd);
    let logPath = this.fd !== null ? this.logFile : null;
    this.fd = null;
    const outputTail = this.tail.length ? this.tail.toString('utf8') : null;
    if (this.failure === null) return { outputTail, logPath, note: null };
    if (logPath !== null && this.written === 0) {
      logPath = null;
      try {
        unlinkSync(this.logFile); // an empty file would pass for a silent attempt's log
      } catch {
        // it stays; nothing points at it
      }
    }
    return { outputTail, logPath, note: `${logPath ? 'its log is cut short' : 'no log kept'}: ${this.failure}` };
  }
}

/**
 * The tail as stored: the output's last bytes, then a line saying why its log is missing
 * or incomplete (within TAIL_BYTES), so `show` and `logs` tell the user.
 */
export function tailWithNote(tail: string | null, note: string | null): string | null {
  if (note === null) return tail;
  const line = Buffer.from(`[splitdance] ${note}\n`);
  const kept = Buffer.from(tail ?? '').subarray(-Math.max(0, TAIL_BYTES - line.length));
  return Buffer.concat([TAIL_BYTES > line.length ? kept : Buffer.alloc(0), line]).subarray(-TAIL_BYTES).toString('utf8');
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
