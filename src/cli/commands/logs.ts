import { closeSync, existsSync, fstatSync, readSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { UsageError } from '../../errors.js';
import { parseCount } from '../../job/units.js';
import { attemptLogFile, attemptLogPlaces, batchLogFolder, logRange, openLogForReading } from '../../store/log-layout.js';
import { logRoot, resolveDbPath } from '../../store/open-store.js';
import type { AttemptRow, BatchRecord, CommandStore } from '../../store/task-store.js';
import { printable } from '../format.js';
import { drained, line, type Io, type OutputFlags } from '../io.js';
import { PollBackoff } from '../../run/poll-backoff.js';
import { commandLineFor } from '../suggested-commands.js';
import { defaultedNote, withBatch } from '../with-store.js';
import { findTask } from '../task-json.js';

export interface LogsFlags extends OutputFlags {
  db?: string;
  batch?: string;
  attempt?: string;
  follow?: boolean;
  failed?: boolean;
}

/** How often `--follow` looks for new output and for the attempt's end: a fixed 200 ms (poll-backoff.ts). */
const FOLLOW_POLL_MS = 200;
const CHUNK = 64 * 1024;

/**
 * `splitdance logs <key>`: the full captured output of the last attempt, or of `--attempt N`;
 * of a running attempt, the output so far, and with `--follow` the rest as it comes until the
 * attempt ends. Without a key, `--batch B` prints every task's last attempt and `--failed`
 * every FAILED task's, each after a `==> KEY <==` header, in one process.
 * Piped or redirected, the bytes are exact; on a terminal, control characters are shown
 * escaped (lines and tabs kept), since the output of a task is data, not terminal commands.
 * The file read is the one this store's layout names for that attempt, never another
 * store's file that happens to have the same name.
 */
export async function logsCommand(key: string | undefined, flags: LogsFlags, io: Io): Promise<number> {
  // The output is the task's bytes as they were: there is no JSON of it to give (show --json has the tail).
  if (flags.json) throw new UsageError('logs has no --json; `show --json KEY` gives output tails');
  const n = flags.attempt === undefined ? null : parseCount(flags.attempt, '--attempt', { min: 1 });
  if (key === undefined && flags.batch === undefined && !flags.failed) {
    throw new UsageError('give a task KEY, or --batch B for every task of a batch, or --failed for the failed ones');
  }
  if (key === undefined && (n !== null || flags.follow)) throw new UsageError(`${n !== null ? '--attempt' : '--follow'} goes with a task KEY`);
  if (key !== undefined && flags.failed) throw new UsageError('--failed prints every failed task: give it without a KEY');
  const root = logRoot(resolveDbPath(flags.db, io.cwd, io.env), io.cwd);
  return withBatch(
    flags,
    io,
    async (store, batch, { target, defaulted }) => {
      if (defaulted && !flags.quiet) line(io.stderr, defaultedNote(batch.name));
      const log = new LogReader(store, batch, root, io);
      if (key === undefined) return log.many(flags.failed === true);
      const { task, attempts } = await findTask(store, batch, key, target);
      const shown = printable(key);
      if (attempts.length === 0) throw new UsageError(`task "${shown}" has not been attempted yet`);
      const attempt = n === null ? attempts[attempts.length - 1]! : [...attempts].reverse().find((a) => a.attempt === n);
      if (!attempt) throw new UsageError(`task "${shown}" has no attempt ${n}; \`${commandLineFor(target, ['show'], key)}\` lists its attempts`);
      if (attempt.endedAt === null) return log.running(task.id, attempt, shown, flags.follow === true);
      const opened = log.open(attempt, shown);
      if (opened === null) {
        line(io.stderr, `attempt ${attempt.attempt} of ${shown} printed nothing`);
        return 0;
      }
      await log.copy(opened.fd, opened.from, opened.to);
      closeSync(opened.fd);
      return 0;
    },
    { readonly: true },
  );
}

class LogReader {
  private readonly terminal: boolean;
  private readonly decoder = new StringDecoder('utf8');
  private endedWithNewline = true;

  constructor(
    private readonly store: CommandStore,
    private readonly batch: BatchRecord,
    private readonly root: string,
    private readonly io: Io,
  ) {
    this.terminal = (io.stdout as NodeJS.WriteStream).isTTY === true;
  }

  /**
   * An ended attempt's log: the file, and the bytes of it that are the log (a segment's range,
   * or from 0 to its end); null when it printed nothing. Throws when the log is gone or is not
   * this store's.
   */
  open(attempt: AttemptRow, shown: string): { fd: number; from: number; to: number | null } | null {
    if (!attempt.logPath) return null;
    const range = logRange(attempt.logPath);
    const places = attemptLogPlaces(this.root, this.store.identity, this.batch.name, attempt.id, range.path);
    let fd: number | null = null;
    for (const place of places) fd ??= openLogForReading(place);
    if (fd === null && !places.includes(range.path)) {
      // Recorded by a splitdance from before store identities: the file at that path may be another store's.
      throw new UsageError(
        `the log of attempt ${attempt.attempt} was recorded at ${printable(attempt.logPath)}, outside this store's log folder; it is not shown, as it may be another store's`,
      );
    }
    if (fd === null) throw new UsageError(`the log ${printable(range.path)} of ${shown} is gone (pruned or deleted)`);
    return { fd, from: range.offset, to: range.length === null ? null : range.offset + range.length };
  }

  /**
   * A running attempt: its log is where this layout puts it (the store records the path only
   * when the attempt ends). What it printed so far, and with `follow` the rest until it ends.
   */
  async running(taskId: number, attempt: AttemptRow, shown: string, follow: boolean): Promise<number> {
    const folder = batchLogFolder(this.root, this.store.identity, this.batch.name);
    // The first item of a group (-n, a batch call) runs its group's command, logged as `<id>-1.log`.
    const own = attemptLogFile(folder, attempt.id);
    const group = attemptLogFile(folder, attempt.id, 1);
    const path = !existsSync(own) && existsSync(group) ? group : own;
    let fd = openLogForReading(path);
    let at = fd === null ? 0 : await this.copy(fd, 0);
    if (!follow) {
      if (fd === null) line(this.io.stderr, `attempt ${attempt.attempt} of ${shown} is running and has printed nothing yet (on ${printable(attempt.host)})\n(an item run in a group prints to its group's log, shown once it ends)`);
      else closeSync(fd);
      return 0;
    }
    const poll = new PollBackoff(FOLLOW_POLL_MS);
    let ended: AttemptRow | undefined;
    for (;;) {
      const now = (await this.store.attemptsOf(taskId)).find((a) => a.id === attempt.id);
      fd ??= openLogForReading(path);
      if (fd !== null) at = await this.copy(fd, at);
      if (!now || now.endedAt !== null) {
        ended = now;
        break;
      }
      await new Promise((r) => setTimeout(r, poll.next()));
    }
    if (fd !== null) {
      await this.copy(fd, at); // what it wrote between the last look and its end (its file moved into a segment is still this one)
      closeSync(fd);
    } else if (ended?.logPath) {
      // It ended before its own file was opened, and the file went into a segment: the recorded range.
      const log = this.open(ended, shown);
      if (log) {
        await this.copy(log.fd, log.from, log.to);
        closeSync(log.fd);
      }
    }
    return 0;
  }

  /** `--batch B` / `--failed`: each task's last attempt after a header; tasks that printed nothing are counted on stderr. */
  async many(failedOnly: boolean): Promise<number> {
    let listed = 0;
    let silent = 0;
    // Page by page: a batch of millions is never held in memory, and each log is copied at stdout's pace.
    await this.store.eachTaskPage({ batchId: this.batch.id, ...(failedOnly ? { status: 'FAILED' as const } : {}) }, async (tasks) => {
      for (const task of tasks) {
        listed++;
        const attempts = await this.store.attemptsOf(task.id);
        const last = attempts[attempts.length - 1];
        const log = last && last.endedAt !== null ? this.open(last, printable(task.key)) : null;
        if (log === null) {
          silent++;
          continue;
        }
        if (!this.write(Buffer.from(`==> ${printable(task.key)} <==\n`))) await drained(this.io.stdout);
        const end = await this.copy(log.fd, log.from, log.to);
        closeSync(log.fd);
        if (end > log.from && !this.endedWithNewline && !this.write(Buffer.from('\n'))) await drained(this.io.stdout);
      }
    });
    const what = failedOnly ? 'failed task' : 'task';
    if (listed === 0) line(this.io.stderr, `no ${what}s in batch ${printable(this.batch.name)}`);
    else if (silent) line(this.io.stderr, `${silent} ${what}${silent === 1 ? '' : 's'} printed nothing (or never ran)`);
    return 0;
  }

  /** Copies the file from byte `from` to `to` (or its current end) onto stdout, as fast as stdout takes it; returns the new offset. */
  async copy(fd: number, from: number, to: number | null = null): Promise<number> {
    const size = Math.min(fstatSync(fd).size, to ?? Number.POSITIVE_INFINITY);
    const buf = Buffer.alloc(Math.min(CHUNK, Math.max(1, size - from)));
    let at = from;
    while (at < size) {
      const got = readSync(fd, buf, 0, Math.min(buf.length, size - at), at);
      if (got === 0) break;
      if (!this.write(buf.subarray(0, got))) await drained(this.io.stdout);
      at += got;
    }
    return at;
  }

  /** False when stdout wants a pause (its buffer is full). */
  private write(bytes: Buffer): boolean {
    if (bytes.length === 0) return true;
    this.endedWithNewline = bytes[bytes.length - 1] === 0x0a;
    return this.io.stdout.write(this.terminal ? printable(this.decoder.write(bytes), { lines: true }) : Buffer.from(bytes));
  }
}
