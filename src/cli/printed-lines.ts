/** Lines held back above the bar at most: a longer line goes out in pieces. */
const HELD_LINE_BYTES = 1024 * 1024;

/**
 * An attempt's output as printed, chunk by chunk: every line after `tag` when there is one,
 * the last one ended. `add(chunk, wholeLines)` gives what to write now; with `wholeLines` (the
 * bar's log, which a partial line would garble) a last partial line waits for its end.
 */
export class PrintedLines {
  private atLineStart = true;
  private held: Buffer = Buffer.alloc(0);

  constructor(private readonly tag: Buffer | null) {}

  add(chunk: Buffer, wholeLines = false): Buffer {
    const text = this.tagged(chunk);
    const all = this.held.length ? Buffer.concat([this.held, text]) : text;
    if (!wholeLines || all.length > HELD_LINE_BYTES) {
      this.held = Buffer.alloc(0);
      return all;
    }
    const cut = all.lastIndexOf(0x0a) + 1;
    this.held = Buffer.from(all.subarray(cut));
    return all.subarray(0, cut);
  }

  end(): Buffer {
    const rest = this.held;
    this.held = Buffer.alloc(0);
    return this.atLineStart ? rest : Buffer.concat([rest, Buffer.from('\n')]);
  }

  private tagged(chunk: Buffer): Buffer {
    if (chunk.length === 0) return chunk;
    const ends = chunk[chunk.length - 1] === 0x0a;
    if (this.tag === null) {
      this.atLineStart = ends;
      return chunk;
    }
    const parts: Buffer[] = [];
    for (let start = 0; start < chunk.length; ) {
      if (this.atLineStart) parts.push(this.tag);
      const nl = chunk.indexOf(0x0a, start);
      const end = nl < 0 ? chunk.length : nl + 1;
      parts.push(chunk.subarray(start, end));
      this.atLineStart = nl >= 0;
      start = end;
    }
    return Buffer.concat(parts);
  }
}
