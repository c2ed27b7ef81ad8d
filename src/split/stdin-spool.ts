/** A list on stdin, copied to a private temporary file so it can be read more than once. */
import { createWriteStream, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ResourceError, UsageError } from '../errors.js';
import { isDeadOwner, ownerId } from '../lease-owner.js';
import { printable } from '../printable.js';

const PREFIX = 'splitdance-stdin-';
/** Signals whose default action would end the process while stdin is read, leaving the copy. */
const FATAL = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export interface StdinSpool {
  /** The copy of stdin. */
  path: string;
  /** Removes the copy and its folder (also done when this process exits). */
  remove(): void;
}

/**
 * Copies stdin to a file in a new 0700 folder of $TMPDIR and returns its path. Planning reads
 * a source more than once (the output check, `--dry-run`, the enqueue), and stdin can be read
 * only once; the copy streams, so memory stays flat. The items themselves are stored with their
 * tasks: the run removes the copy once it has enqueued them, and at exit. A process killed
 * before that (SIGKILL) cannot: its folder names its owner (`owner`, a lease owner id), and the
 * next `run -` on this machine removes the folders of owners that are provably dead.
 */
export async function spoolStdin(stdin: NodeJS.ReadableStream & { isTTY?: boolean } = process.stdin, what = 'stdin'): Promise<StdinSpool> {
  if (stdin.isTTY) throw new UsageError('`run -` reads a list from stdin, which is a terminal here; pipe one in (`ls | splitdance run - --exec …`) or give --items FILE');
  removeDeadSpools(tmpdir());
  let dir: string;
  try {
    dir = mkdtempSync(join(tmpdir(), PREFIX));
  } catch (err) {
    throw noRoom(err, what);
  }
  const remove = () => {
    process.off('exit', remove);
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', remove);
  // A signal that would kill the process mid-copy removes the copy first, then kills it as before.
  const onSignal = (signal: NodeJS.Signals) => {
    remove();
    for (const s of unhandled) process.off(s, onSignal);
    process.kill(process.pid, signal);
  };
  const unhandled = FATAL.filter((s) => process.listenerCount(s) === 0);
  for (const s of unhandled) process.once(s, onSignal);
  try {
    writeFileSync(join(dir, 'owner'), ownerId(), { mode: 0o600, flag: 'wx' });
    const path = join(dir, 'items');
    await pipeline(stdin, createWriteStream(path, { mode: 0o600, flags: 'wx' }));
    return { path, remove };
  } catch (err) {
    remove();
    throw (err as NodeJS.ErrnoException).syscall === 'read' ? err : noRoom(err, what);
  } finally {
    for (const s of unhandled) process.off(s, onSignal);
  }
}

/**
 * Removes the stdin copies in `dir` left by `run -` processes that died without removing them:
 * this user's folders whose recorded owner is provably dead (same host, boot and PID namespace,
 * its process gone). A folder without an owner (being made, or left by a version that recorded
 * none) or owned by a live or remote process is left alone.
 */
function removeDeadSpools(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return; // a missing $TMPDIR is reported by the mkdtemp that follows
  }
  const uid = process.getuid?.();
  for (const name of names) {
    if (!name.startsWith(PREFIX)) continue;
    const folder = join(dir, name);
    try {
      const st = lstatSync(folder);
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) continue;
      if (isDeadOwner(readFileSync(join(folder, 'owner'), 'utf8').trim())) rmSync(folder, { recursive: true, force: true });
    } catch {
      // gone meanwhile, unreadable, or without an owner: not ours to judge
    }
  }
}

/** $TMPDIR missing, full, read-only or not ours: the run cannot keep its list (exit 4), with the ways on. */
function noRoom(err: unknown, what = 'stdin'): Error {
  const e = err as NodeJS.ErrnoException;
  if (typeof e.code !== 'string' || !e.syscall) return e;
  const why = { ENOENT: 'no such folder', ENOSPC: 'no space left', EDQUOT: 'over the disk quota', EACCES: 'not writable', EROFS: 'read-only', ENOTDIR: 'not a folder' }[e.code];
  return new ResourceError(
    `${what === 'stdin' ? '`run -`' : 'splitdance'} could not copy ${what} into ${printable(tmpdir())} (${why ? `${why}, ` : ''}${e.code}): set TMPDIR to a writable folder with room for the list, or give it with --items FILE`,
  );
}
