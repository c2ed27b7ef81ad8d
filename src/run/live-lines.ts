import { open, unlink, type FileHandle } from 'node:fs/promises';

/** Where the lines go: attempt-printer.ts's PrintedStream (declared here too: that file imports this one). */
interface PrintedStream {
  write(chunk: Buffer): Promise<void>;
  end(): Promise<void>;
}

/**
 * `--line-buffer`: one stream's copy (print-copy.ts) of a running attempt, read as it grows.
 * `next()` gives the whole lines written since the last read, never a line's start without
 * its end, except a line longer than `chunk`, which goes out in pieces of `chunk` bytes (a
 * line of 50 MB is never held whole) and says so (`cut`), so the printer lets no other line in
 * until its end. Nothing is held in memory between reads: an unfinished line stays in the file
 * and is read again with its end. `rest()` reads what is left once the attempt has ended.
 */
export class LiveCopy {
  private file: FileHandle | null = null;
  private offset = 0;
  /** The last bytes handed on ended inside a line. */
  private midLine = false;
  private stream: PrintedStream | null = null;

  constructor(
    private readonly path: string,
    private readonly chunk: number,
    private readonly openStream: () => PrintedStream,
  ) {}

  /** Whether the last bytes printed ended inside a line (a long line's piece). */
  get cut(): boolean {
    return this.midLine;
  }

  /** Prints the lines written since the last call (see the class); false when there was nothing to print. */
  async next(): Promise<boolean> {
    const read = await this.read();
    if (read === null) return false;
    const { bytes, bytesRead } = read;
    const nl = bytes.lastIndexOf(0x0a);
    // A partial line waits in the file for its end, unless it fills a whole read or one of its pieces went out already.
    const take = nl >= 0 ? nl + 1 : this.midLine || bytesRead === this.chunk ? bytesRead : 0;
    if (take === 0) return false;
    this.offset += take;
    this.midLine = nl < 0;
    await this.out().write(bytes.subarray(0, take));
    return true;
  }

  /** The attempt has ended: everything left is printed (a last line without its newline gets one), and the copy goes. */
  async rest(): Promise<void> {
    for (;;) {
      const read = await this.read();
      if (read === null) break;
      this.offset += read.bytesRead;
      await this.out().write(read.bytes);
    }
    this.midLine = false;
    await this.stream?.end();
    await this.close();
  }

  /** Stops reading (the attempt's copy was printed, or is not to be): the file goes. */
  async close(): Promise<void> {
    await this.file?.close().catch(() => undefined);
    this.file = null;
    await unlink(this.path).catch(() => undefined);
  }

  private out(): PrintedStream {
    return (this.stream ??= this.openStream());
  }

  /** Up to `chunk` bytes from where the last read stopped; null when there are none (or no file yet). */
  private async read(): Promise<{ bytes: Buffer; bytesRead: number } | null> {
    if (this.file === null) {
      try {
        this.file = await open(this.path, 'r');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null; // nothing written yet
        throw err;
      }
    }
    const buf = Buffer.allocUnsafe(this.chunk);
    const { bytesRead } = await this.file.read(buf, 0, this.chunk, this.offset);
    return bytesRead === 0 ? null : { bytes: buf.subarray(0, bytesRead), bytesRead };
  }
}
