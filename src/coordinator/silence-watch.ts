import { statSync } from 'node:fs';
import { longTimeout, type LongTimer } from '../long-timer.js';
import { monotonicMs } from '../wall-steps.js';

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
 * last sign plus the timeout; nothing runs between signs. Signs are times of the monotonic
 * clock, so a wall-clock step neither hides a silence nor invents one; a log's mtime (a wall
 * time) only says how long ago, within the time since the last check, the output came.
 */
export class SilenceWatch {
  private lastSign = monotonicMs();
  /** When the log was last looked at (monotonic), and the mtime it had then. */
  private checkedAt = this.lastSign;
  private lastMtime: number | null = null;
  private timer: LongTimer;
  private cancelled = false;

  /** `logFile`: an exec attempt's log, whose writes count as signs (null for a module). Starts now. */
  constructor(
    private readonly timeoutMs: number,
    private readonly logFile: string | null,
    private readonly silent: () => void,
  ) {
    this.timer = longTimeout(() => this.check(), timeoutMs);
  }

  /** A sign of life seen now. */
  sign(): void {
    this.lastSign = monotonicMs();
  }

  cancel(): void {
    this.cancelled = true;
    this.timer.cancel();
  }

  private check(): void {
    if (this.cancelled) return;
    const now = monotonicMs();
    if (this.logFile !== null) {
      // No file yet: it printed nothing (the helper may also remove an empty one). A changed
      // mtime is output since the last check; its age on the wall clock places it in that span.
      const mtime = mtimeOf(this.logFile);
      if (mtime !== null && mtime !== this.lastMtime) {
        const age = Math.min(Math.max(0, Date.now() - mtime - MTIME_SLACK_MS), now - this.checkedAt);
        this.lastSign = Math.max(this.lastSign, now - age);
      }
      this.lastMtime = mtime;
      this.checkedAt = now;
    }
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
