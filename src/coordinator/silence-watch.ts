import { statSync } from 'node:fs';
import { longTimeout, type LongTimer } from '../long-timer.js';

/**
 * Kernel file times are coarse (up to one clock tick behind the write): a log's mtime plus
 * this is never earlier than the output it records, so a kill is never early.
 */
const MTIME_SLACK_MS = 10;

/**
 * `--heartbeat-timeout`: stops an attempt that goes `timeoutMs` without a sign of life. A
 * module's sign is `ctx.heartbeat()` (its worker sends at most a few a second: `sign()`);
 * an exec command's is any output, which goes straight into its log file, so its mtime is
 * read only when the timer fires, never per write. One timer per attempt, re-armed at the
 * last sign plus the timeout; nothing runs between signs.
 */
export class SilenceWatch {
  private lastSign: number;
  private timer: LongTimer;
  private cancelled = false;

  /** `logFile`: an exec attempt's log, whose writes count as signs (null for a module). */
  constructor(
    private readonly timeoutMs: number,
    private readonly logFile: string | null,
    private readonly silent: () => void,
    startedAt = Date.now(),
  ) {
    this.lastSign = startedAt;
    this.timer = longTimeout(() => this.check(), timeoutMs);
  }

  /** A sign of life seen now. */
  sign(): void {
    this.lastSign = Date.now();
  }

  cancel(): void {
    this.cancelled = true;
    this.timer.cancel();
  }

  private check(): void {
    if (this.cancelled) return;
    if (this.logFile !== null) {
      // No file yet: it printed nothing (the helper may also remove an empty one).
      const mtime = mtimeOf(this.logFile);
      if (mtime !== null) this.lastSign = Math.max(this.lastSign, mtime + MTIME_SLACK_MS);
    }
    const now = Date.now();
    if (now - this.lastSign >= this.timeoutMs) return this.silent();
    this.timer = longTimeout(() => this.check(), this.lastSign + this.timeoutMs - now);
  }
}

/** The file's mtime; null when it is not there (it printed nothing) or cannot be read. */
function mtimeOf(path: string): number | null {
  try {
    return statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? null;
  } catch {
    return null;
  }
}
