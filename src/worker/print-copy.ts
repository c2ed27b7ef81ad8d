import { closeSync, constants, openSync, writeSync } from 'node:fs';

const NEW_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * `--print`: a copy of an attempt's stdout and of its stderr, kept apart (the log holds them
 * interleaved), for the coordinator to print whole when the attempt ends. Files
 * `PREFIX.out` and `PREFIX.err` in the run's private folder, created new on the first byte.
 * Best effort: a copy that cannot be written is cut short, the log and the task are not
 * affected.
 */
export class PrintCopy {
  private readonly fds: Record<'out' | 'err', number | null> = { out: null, err: null };
  private readonly broken = { out: false, err: false };

  constructor(private readonly prefix: string) {}

  write(stream: 'out' | 'err', chunk: Buffer | string): void {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (buf.length === 0 || this.broken[stream]) return;
    try {
      this.fds[stream] ??= openSync(`${this.prefix}.${stream}`, NEW_FILE, 0o600);
      for (let off = 0; off < buf.length; ) off += writeSync(this.fds[stream]!, buf, off);
    } catch {
      this.broken[stream] = true;
    }
  }

  close(): void {
    for (const stream of ['out', 'err'] as const) {
      if (this.fds[stream] !== null) closeSync(this.fds[stream]!);
      this.fds[stream] = null;
    }
  }
}
