import { createHash } from '../crypto-on-use.js';
import { chmodSync, closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, rmdirSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { StoreError } from '../errors.js';

/**
 * Where attempt logs live, and which files are a store's own. Under the logs root of a
 * store location (`logRoot` in open-store.ts):
 *
 *   <root>/<store identity>/<sanitised batch name>-<hash of the exact name>/<attempt id>.log
 *
 * A group's command (`-n`, SPEC §10) writes `<attempt id>-1.log`, named after its first
 * item's attempt, and `<attempt id>-<part>.log` for the halves run after it failed (a half of
 * one task writes that task's own log); each item's attempt records the log of the command that
 * decided it.
 *
 * Once an attempt ends, its worker moves its log into a segment (worker/log-segments.ts):
 * `seg-<writer>-<n>.log` in the same folder, the logs of many attempts one after another,
 * appended by one worker process; the attempt then records `SEGMENT#OFFSET+LENGTH:NAME`, the
 * bytes that are its log and the name its own file had. So a batch's attempts leave a few files
 * per worker, not one each. A log too big to be worth the copy (or one that could not be moved)
 * keeps its own file.
 *
 * The identity (random, written when the store was created) keeps two stores apart however
 * alike their batch names; the hash keeps `a/b`, `a_b`, `.` and `..` apart and makes every
 * batch folder a plain name inside the store's folder. Batch names are data: nothing a batch
 * is called can put a path anywhere else. Folders are 0700 and never symlinks; `prune`
 * deletes only regular files named like an attempt's log or a segment inside the batch's own
 * folder (a segment only once the batch is gone).
 */

const IDENTITY = /^[0-9a-f]{32}$/;
const ATTEMPT_LOG = /^[1-9][0-9]*(?:-[1-9][0-9]*)?\.log$/;
const SEGMENT_LOG = /^seg-[0-9a-z]+-[1-9][0-9]*\.log$/;
/** A recorded log in a segment: the segment, the offset and length of the attempt's bytes, the name its own file had. */
const SEGMENT_REF = /^(.+)#([0-9]+)\+([0-9]+):([^/]+)$/;
/** A batch's folder name (batchFolderName): its readable part, then 12 hex digits of its name's hash. */
const BATCH_FOLDER = /^[A-Za-z0-9._-]{0,48}-[0-9a-f]{12}$/;
/** Enough of the name to recognise the folder; the hash makes it unique. */
const READABLE_CHARS = 48;

/** The folder of one store's logs. */
function storeLogFolder(root: string, identity: string): string {
  // The identity is read from the store, so it is checked like any other data before it names a folder.
  if (!IDENTITY.test(identity)) throw new StoreError(`the store's identity ${JSON.stringify(identity)} is not 32 hex digits; was the store changed outside splitdance?`);
  return join(root, identity);
}

/** A batch name as one safe folder name: readable, and distinct for distinct names. */
export function batchFolderName(batch: string): string {
  const readable = batch
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^\./, '_')
    .slice(0, READABLE_CHARS);
  const hash = createHash('sha256').update(batch, 'utf8').digest('hex').slice(0, 12);
  return `${readable}-${hash}`;
}

/** The folder of one batch's logs in one store. */
export function batchLogFolder(root: string, identity: string, batch: string): string {
  return join(storeLogFolder(root, identity), batchFolderName(batch));
}

/** The log file of one attempt (its id, unique in the store) in its batch's folder; `part`: a group's half run after it failed. */
export function attemptLogFile(folder: string, attemptId: number, part = 0): string {
  return join(folder, part ? `${attemptId}-${part}.log` : `${attemptId}.log`);
}

/** Segment `n` of the worker process `writer` (letters and digits) in a batch's folder. */
export function segmentFile(folder: string, writer: string, n: number): string {
  return join(folder, `seg-${writer}-${n}.log`);
}

/** What an attempt records of its log moved into a segment: `SEGMENT#OFFSET+LENGTH:NAME`. */
export function segmentRef(segment: string, offset: number, length: number, name: string): string {
  return `${segment}#${offset}+${length}:${name}`;
}

/**
 * The file a recorded log names and the bytes of it that are the log: a segment's range, or a
 * whole file (`length` null). `name` is the attempt's own log file's name either way.
 */
export function logRange(recorded: string): { path: string; offset: number; length: number | null; name: string } {
  const m = SEGMENT_REF.exec(recorded);
  if (m && SEGMENT_LOG.test(basename(m[1]!)) && ATTEMPT_LOG.test(m[4]!)) return { path: m[1]!, offset: Number(m[2]), length: Number(m[3]), name: m[4]! };
  return { path: recorded, offset: 0, length: null, name: basename(recorded) };
}

/** Whether `path` is named as an attempt's own log directly inside `folder` (by name only). */
function isOwnLogPath(folder: string, path: string): boolean {
  return dirname(path) === folder && ATTEMPT_LOG.test(basename(path));
}

/**
 * Whether an attempt's recorded log is a group's command's (`-n`, a `batch` call; SPEC §10):
 * named after another attempt (the group's first item) or a part of a split group. Returns
 * that name, or null for the attempt's own log.
 */
export function groupLogName(attemptId: number, logPath: string): string | null {
  const { name } = logRange(logPath);
  return ATTEMPT_LOG.test(name) && name !== `${attemptId}.log` ? name : null;
}

/**
 * Creates (or checks) the batch's log folder and the folders above it, each 0700 and a
 * real folder: a symlink or a file in the way is refused, a folder made wider (0777) is
 * narrowed again. Returns the batch's folder.
 */
export function prepareLogFolder(root: string, identity: string, batch: string): string {
  const store = storeLogFolder(root, identity);
  const folder = batchLogFolder(root, identity, batch);
  mkdirSync(dirname(root), { recursive: true, mode: 0o700 });
  for (const dir of [root, store, folder]) ownFolder(dir);
  return folder;
}

function ownFolder(dir: string): void {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw logFolderError(dir, err);
  }
  const st = lstatSync(dir);
  if (!st.isDirectory()) {
    throw new StoreError(`the log folder ${dir} is ${st.isSymbolicLink() ? 'a symlink' : 'not a folder'}; logs are never written through one: remove it`);
  }
  try {
    if ((st.mode & 0o7777) !== 0o700) chmodSync(dir, 0o700);
  } catch (err) {
    throw logFolderError(dir, err);
  }
}

function logFolderError(dir: string, err: unknown): StoreError {
  return new StoreError(`cannot prepare the log folder ${dir}: ${(err as Error).message}; fix its permissions or use another --db`);
}

/**
 * Deletes the listed logs that are provably this batch's own (regular files named like an
 * attempt's log directly inside its folder; anything else is left alone), then the folder
 * if nothing else is in it. Returns the bytes freed. A segment holds many attempts' logs: the
 * listed ranges of segments are left; with `segmentsBefore` (the batch is gone: every attempt
 * of it) the folder's segments last written before it are deleted (a segment written since
 * is a new batch's of the same name).
 */
export function removeBatchLogs(folder: string, paths: readonly string[], segmentsBefore?: number): number {
  let freed = 0;
  const remove = (path: string, before = Number.POSITIVE_INFINITY) => {
    try {
      const st = lstatSync(path);
      if (!st.isFile() || st.mtimeMs >= before) return;
      unlinkSync(path);
      freed += st.size;
    } catch {
      // Already gone (deleted by hand, or by a prune that crashed after its commit).
    }
  };
  for (const path of paths) if (isOwnLogPath(folder, path)) remove(path);
  if (segmentsBefore !== undefined) for (const name of namesIn(folder)) if (SEGMENT_LOG.test(name)) remove(join(folder, name), segmentsBefore);
  try {
    rmdirSync(folder); // only when empty: never a recursive delete
  } catch {
    // Not empty (files not proved ours stay), or not there.
  }
  return freed;
}

/**
 * The bytes of the attempt logs in a batch's folder: what `removeBatchLogs` would free (for
 * `prune --dry-run`). Only regular files named as attempt logs count; nothing is followed.
 */
export function batchLogBytes(folder: string): number {
  let total = 0;
  for (const name of namesIn(folder)) {
    if (!ATTEMPT_LOG.test(name) && !SEGMENT_LOG.test(name)) continue;
    try {
      const st = lstatSync(join(folder, name));
      if (st.isFile()) total += st.size;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/**
 * The batch folders in the store's log folder that no batch of `live` is named for: what a prune
 * killed between a batch's last rows and its segments left (their segments are then deleted by
 * the next prune). Only real folders named as batch folders are listed.
 */
export function foldersOfGoneBatches(root: string, identity: string, live: readonly string[]): string[] {
  const store = storeLogFolder(root, identity);
  const kept = new Set(live.map(batchFolderName));
  return namesIn(store)
    .filter((name) => BATCH_FOLDER.test(name) && !kept.has(name))
    .map((name) => join(store, name))
    .filter((path) => {
      try {
        return lstatSync(path).isDirectory();
      } catch {
        return false;
      }
    });
}

/** The names in `folder`; none when it is not there. */
function namesIn(folder: string): string[] {
  try {
    return readdirSync(folder);
  } catch {
    return [];
  }
}

/**
 * Where to look for the log of attempt `attemptId` of `batch` in the store `identity`: where
 * the store recorded it, when that path names this very store, batch and an attempt log (its
 * own, or its group's: another attempt of the batch, SPEC §10) (a shared
 * store's logs are where its coordinators ran), then where this layout puts it under `root`
 * (a store moved with its logs). A recorded path naming anything else is never read.
 */
export function attemptLogPlaces(root: string, identity: string, batch: string, attemptId: number, recorded: string): string[] {
  // An item of a group records its group's log: another attempt's name, in the same folder; a
  // log moved into a segment, the segment (`recorded` is the file logRange names).
  const own = basename(recorded);
  const name = ATTEMPT_LOG.test(own) || SEGMENT_LOG.test(own) ? own : `${attemptId}.log`;
  const here = join(batchLogFolder(root, identity, batch), name);
  const named =
    basename(recorded) === name &&
    basename(dirname(recorded)) === batchFolderName(batch) &&
    basename(dirname(dirname(recorded))) === identity;
  return named && recorded !== here ? [recorded, here] : [here];
}

/**
 * Opens an attempt's log for reading without following a symlink; null when it is missing
 * or not a regular file.
 */
export function openLogForReading(path: string): number | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  if (fstatSync(fd).isFile()) return fd;
  closeSync(fd);
  return null;
}
