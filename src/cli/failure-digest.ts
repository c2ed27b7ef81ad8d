import { createHash } from '../crypto-on-use.js';

/**
 * What `run` keeps of its failures to repeat at the end (`--quiet`, for cron's mail): the first
 * lines of each kind of error, up to a fixed number of lines in all, and a count of the rest.
 * A run of 450,000 failures once kept every line (17 KB each, 3.9 GB); this keeps at most
 * MAX_LINES lines (each under 5 KB: an error is cut at 4 KiB) and MAX_LINES kinds, whatever
 * the number of failures, and the store has every one of them (`status`, `tasks`).
 */
export class FailureDigest {
  private readonly lines: string[] = [];
  /** Lines kept per error signature; a kind gets an entry only with a line kept, so at most MAX_LINES. */
  private readonly perKind = new Map<string, number>();
  private left = 0;

  /** One terminal failure: its line, and the signature of its error. */
  add(line: string, kind: string): void {
    const kept = this.perKind.get(kind) ?? 0;
    if (this.lines.length >= MAX_LINES || kept >= PER_KIND) {
      this.left++;
      return;
    }
    this.lines.push(line);
    this.perKind.set(kind, kept + 1);
  }

  /** The lines kept, in the order they came, then `… and N more …` when some were not. */
  report(): string[] {
    if (this.left === 0) return [...this.lines];
    const tasks = `${this.left} more failed task${this.left === 1 ? '' : 's'}`;
    return [...this.lines, `… and ${tasks}: \`status\` and \`tasks --status FAILED\` show them`];
  }
}

/** Lines repeated at the end in all: a cron mail a person reads, not a listing (`tasks --status FAILED` is). */
export const MAX_LINES = 100;
/** Lines per kind of error: ten of one error tell what ten thousand would. */
export const PER_KIND = 10;

/**
 * The kinds of error a run announces as they first happen (one line each, also while they are
 * retried). At most MAX_KINDS are remembered; past that, new kinds are no longer announced
 * one by one, and one line says so, once: a run whose every error differs keeps a bounded set.
 */
export class ErrorKinds {
  /**
   * Digests of the signatures, not the signatures: a signature is cut from its 4 KiB error, and
   * a cut string may keep the whole error alive (1,000 kinds held 4 MB; their digests, 70 KB).
   */
  private readonly seen = new Set<string>();
  private full = false;

  /** `first`: announce this failure (the first of its kind); `overflow`: say once that no more kinds are announced. */
  see(signature: string): 'first' | 'known' | 'overflow' | 'quiet' {
    const kind = createHash('sha256').update(signature).digest('base64');
    if (this.seen.has(kind)) return 'known';
    if (this.seen.size < MAX_KINDS) {
      this.seen.add(kind);
      return 'first';
    }
    if (this.full) return 'quiet';
    this.full = true;
    return 'overflow';
  }
}

export const MAX_KINDS = 1000;
