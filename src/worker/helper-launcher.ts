import { closeSync, fstatSync, mkdirSync, openSync, readSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname } from 'node:path';
import { describeE2big } from './arg-limits.js';
import { Launch, type Launched, type Launcher, type LaunchRequest } from './launcher.js';
import { logSpaceLow } from './log-space.js';
import { TAIL_BYTES } from './output-capture.js';
import type { Spawner } from './spawner.js';

/** How long a log folder's free space, once looked at, is taken as known. */
const SPACE_CHECK_MS = 100;
const SIGNAL_NAMES = new Map(Object.entries(constants.signals).map(([name, n]) => [n, name as NodeJS.Signals]));

/**
 * Commands started by the slot's spawner helper (spawner.c), which holds the queue and
 * writes each command's output straight into its log. A log that cannot take its output (a
 * full disk, a folder that cannot be made) would make the command's own writes fail and fail
 * it, so its output is discarded instead and the tail says why: the outcome is what the
 * command did, as with Node's spawn.
 */
export class HelperLauncher implements Launcher {
  /** Log folders made already: one mkdir per folder, not per attempt. */
  private readonly madeDirs = new Set<string>();
  private readonly space = new Map<string, { at: number; low: boolean }>();

  constructor(readonly spawner: Spawner) {}

  launch(request: LaunchRequest): Launch {
    const launch = new Launch();
    launch.end(this.run(request, launch));
    return launch;
  }

  dropQueued(): void {
    this.spawner.dropQueued();
  }

  /** Hands the command to the helper, whose client tells `launch` its start; resolves to its end. */
  private async run(request: LaunchRequest, launch: Launch): Promise<Launched> {
    const { argv, fallback, vars, logFile } = request;
    let noLog: string | null = null;
    const dir = dirname(logFile);
    if (!this.madeDirs.has(dir)) {
      try {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        this.madeDirs.add(dir);
      } catch (err) {
        noLog = `the log folder ${dir} could not be made: ${(err as Error).message}`;
      }
    }
    if (noLog === null && this.spaceLow(dir)) noLog = `the log folder ${dir} is full`;
    const end = await this.spawner.run(argv, fallback, vars, noLog === null ? logFile : '', launch);
    switch (end.kind) {
      case 'exited': {
        if (end.logErrno !== null) noLog = `its log ${logFile} could not be created: ${errnoName(end.logErrno)}`;
        const signo = end.status & 0x7f;
        const name = signo ? (SIGNAL_NAMES.get(signo) ?? null) : null;
        const written = end.written > 0;
        // A signal Node has no name for (real-time ones) is reported as the shell would: 128+n.
        const code = signo ? (name ? null : 128 + signo) : (end.status >> 8) & 0xff;
        // The disk filled while it ran: that may be why it failed (a write of its output failed).
        const full = noLog === null && (code !== 0 || name !== null) && logSpaceLow(dir);
        return {
          kind: 'ran',
          code,
          signal: name,
          outputTail: written ? readTail(logFile, end.written) : null,
          logPath: written ? logFile : null,
          note: noLog === null ? null : `no output kept: ${noLog}`,
          cause: full ? `its log folder ${dir} filled up while it ran, so writing its output may have failed` : null,
          endedAt: end.endedAt,
          lingers: end.lingers,
          wroteStderr: noLog === null ? end.wroteStderr : null,
        };
      }
      case 'spawn-failed': {
        const code = errnoName(end.errno);
        // Arguments exec refuses (one over 128 KiB): which one, and not retried (they would be the same).
        if (code === 'E2BIG') return { kind: 'not-started', code, message: `could not start ${argv[0]}: ${describeE2big(argv, fallback, vars)}`, retryable: false };
        return { kind: 'not-started', code, message: `could not start ${argv[0]}: spawn ${argv[0]} ${code}` };
      }
      case 'dropped':
      case 'spawner-died':
        return end.kind === 'dropped' ? end : { kind: 'died', signal: end.signal };
    }
  }

  /** Whether the log folder is full, looked at most every SPACE_CHECK_MS (a statfs per task costs more than some tasks). */
  private spaceLow(dir: string): boolean {
    const now = Date.now();
    const seen = this.space.get(dir);
    if (seen && now - seen.at < SPACE_CHECK_MS) return seen.low;
    const low = logSpaceLow(dir);
    this.space.set(dir, { at: now, low });
    return low;
  }
}

function errnoName(errno: number): string {
  return Object.entries(constants.errno).find(([, n]) => n === errno)?.[0] ?? `errno ${errno}`;
}

/** The last bytes (at most TAIL_BYTES) of the `written` the command appended to its log. */
function readTail(logFile: string, written: number): string | null {
  try {
    const fd = openSync(logFile, 'r');
    try {
      const size = fstatSync(fd).size;
      const n = Math.min(TAIL_BYTES, written, size);
      const buf = Buffer.alloc(n);
      readSync(fd, buf, 0, n, size - n);
      return buf.toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
}
