import { closeSync, constants, openSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname } from 'node:path';

const NEW_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** The start of the name of `--results`' copies folder inside DIR (run/attempt-results.ts): copies there are for the results. */
export const RESULTS_COPIES = '.splitdance-copies-';

/**
 * `--print` and `--results`: a copy of an attempt's stdout and of its stderr, kept apart (the
 * log holds them interleaved), for the coordinator to print or keep when the attempt ends.
 * Files `PREFIX.out` and `PREFIX.err` in the run's private folder (in the temporary directory,
 * or with `--results` inside its DIR), created new on the first byte. A copy that cannot be written whole (a full TMPDIR) is removed, not printed cut
 * short: `close()` says why, and the attempt fails with that (the log is not affected).
 */
export class PrintCopy {
  private readonly fds: Record<'out' | 'err', number | null> = { out: null, err: null };
  /** Why a stream's copy could not be written, once it could not. */
  private readonly lost: Record<'out' | 'err', NodeJS.ErrnoException | null> = { out: null, err: null };

  constructor(private readonly prefix: string) {}

  write(stream: 'out' | 'err', chunk: Buffer | string): void {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (buf.length === 0 || this.lost[stream]) return;
    try {
      this.fds[stream] ??= openSync(`${this.prefix}.${stream}`, NEW_FILE, 0o600);
      for (let off = 0; off < buf.length; ) off += writeSync(this.fds[stream]!, buf, off);
    } catch (err) {
      this.lost[stream] = err as NodeJS.ErrnoException;
      this.drop(stream);
    }
  }

  /**
   * Closes the copies; returns why one could not be kept whole (null: both are whole), for the
   * attempt's error: a copy printed cut short would pass for the command's whole output.
   */
  close(): string | null {
    for (const stream of ['out', 'err'] as const) {
      if (this.fds[stream] !== null) closeSync(this.fds[stream]!);
      this.fds[stream] = null;
    }
    const stream = this.lost.out ? 'out' : this.lost.err ? 'err' : null;
    if (stream === null) return null;
    const err = this.lost[stream]!;
    const folder = dirname(this.prefix);
    const tmp = dirname(folder);
    const why = err.code === 'ENOSPC' ? 'no space left' : err.code === 'EDQUOT' ? 'disk quota exceeded' : (err.code ?? err.message);
    if (basename(folder).startsWith(RESULTS_COPIES)) {
      return `--results could not keep a copy of its std${stream} in ${tmp}: ${why}, so its results were not written (its log has the output); free space there`;
    }
    return (
      `--print could not keep a copy of its std${stream} in the temporary folder ${tmp} (TMPDIR): ${why}, ` +
      `so it was not printed (its log has it); free space there or set TMPDIR to a folder with room`
    );
  }

  /** The part of a copy that could be written goes: it is not printed. */
  private drop(stream: 'out' | 'err'): void {
    const fd = this.fds[stream];
    if (fd === null) return; // never created: the open failed
    this.fds[stream] = null;
    try {
      closeSync(fd);
      unlinkSync(`${this.prefix}.${stream}`);
    } catch {
      // gone already; the run's end removes its folder whatever is left in it
    }
  }
}
