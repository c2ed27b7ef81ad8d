import { constants, rmSync } from 'node:fs';
import { lstat, open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { SerializedError } from '../errors.js';
import { notReplaceable } from '../replaceable-path.js';
import { isProblem, walkOutputFolders, type FolderId } from './output-folders.js';
import type { OutputPaths } from './output-path.js';

/**
 * A declared output from the attempt's temporary file to its output path. The worker checks
 * and syncs the file the attempt wrote (`finishOutput`); the coordinator commits the success,
 * recording the temporary file, and only then renames it onto the output path (`placeOutput`:
 * atomic, idempotent, redone by recovery after a crash between commit and rename). A fenced-off
 * attempt's commit does not win, so it never renames: its file is removed (`discardOutput`).
 * Anything but a success removes the file at once.
 */

/** What an attempt's output needs before it starts: the folder it was checked in, or the error it fails with instead. */
export type PreparedOutput = { folder: FolderId } | { error: { name: string; message: string; retryable: boolean } };

/**
 * Makes the output's folders before the attempt starts (0700, whatever the umask: a folder
 * splitdance makes is its own), none through a symlink below the folder the template names
 * (output-folders.ts), and checks what is at the output path. A link or a file among the
 * folders, or a folder or a device at the path, fails the task for good.
 */
export function prepareOutput(out: OutputPaths): PreparedOutput {
  const walked = walkOutputFolders(out, true);
  if (isProblem(walked)) return { error: { name: walked.retryable ? 'Error' : 'PermanentError', message: walked.message, retryable: walked.retryable } };
  const blocked = outputBlocked(out.path);
  return blocked === null ? { folder: walked } : { error: { name: 'PermanentError', message: blocked, retryable: false } };
}

/** Why the file at an output path may not be replaced (anything but a regular file), or null. */
function outputBlocked(path: string): string | null {
  const kind = notReplaceable(path);
  return kind && `declared output ${path} is ${kind}, not a regular file; splitdance replaces only regular files: remove it or choose another --output`;
}

/**
 * After a successful command: the temporary file must be a regular file (never a symlink: it
 * is opened with O_NOFOLLOW) and is synced, so a success committed next has its whole content
 * on disk. Returns the error that fails the attempt instead, and whether a retry could help,
 * or null. Asynchronous: the sync waits on the disk in libuv's threads, never in the event loop.
 */
async function checkOutput(out: OutputPaths, how: string, folder: FolderId | null): Promise<{ message: string; retryable: boolean } | null> {
  // The folders again: a link planted while the command ran fails it, and so does a folder
  // replaced by another (its file is not where the rename would take it from).
  const walked = walkOutputFolders(out, false);
  if (isProblem(walked)) return walked;
  if (folder !== null && (walked.dev !== folder.dev || walked.ino !== folder.ino)) {
    return { message: `the declared output's folder ${dirname(out.path)} was replaced while the attempt ran; its output is not used`, retryable: true };
  }
  let st;
  try {
    st = await lstat(out.temp);
  } catch {
    return { message: `declared output not written: ${out.path} (${how})`, retryable: true };
  }
  if (!st.isFile()) return { message: `declared output ${out.path} was not written as a regular file (${how})`, retryable: true };
  const blocked = outputBlocked(out.path);
  if (blocked) return { message: blocked, retryable: false };
  try {
    await syncPath(out.temp, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    return { message: `declared output ${out.path} could not be synced: ${(err as Error).message}`, retryable: true };
  }
  return null;
}

/**
 * Puts a committed success's output in place: the rename, then its folder's sync, so a power
 * loss after it cannot undo it. Idempotent: a temporary file already gone with a file at the
 * output path was renamed before (by this run, or by recovery elsewhere). Returns why it could
 * not (`missing`: neither file is there), or null.
 *
 * `late`: a rename redone after its run (recovery, or another batch declaring the output). A
 * file at the output path modified after the temporary file is a later success's (written
 * while this one's rename kept failing): the temporary file goes instead, and the output stays.
 */
export async function placeOutput(out: OutputPaths, late = false): Promise<{ error: string; missing: boolean } | null> {
  // Never through a link planted in the output's folders since the attempt checked them.
  const walked = walkOutputFolders(out, false);
  if (isProblem(walked) && !walked.missing) return { error: `declared output could not be moved onto ${out.path}: ${walked.message}`, missing: false };
  if (late && (await newerThan(out.path, out.temp))) {
    discardOutput(out);
    return null;
  }
  try {
    await rename(out.temp, out.path);
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    if (!missing || !(await exists(out.path))) return { error: `declared output could not be moved onto ${out.path}: ${(err as Error).message}`, missing };
  }
  try {
    await syncFolder(dirname(out.path));
  } catch {
    // the rename happened; a folder that cannot be synced (some network file systems) only loses durability
  }
  return null;
}

/** Whether `path` was modified after `than` (both there). */
async function newerThan(path: string, than: string): Promise<boolean> {
  try {
    const [a, b] = await Promise.all([lstat(path, { bigint: true }), lstat(than, { bigint: true })]);
    return a.mtimeNs > b.mtimeNs;
  } catch {
    return false;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** Per folder: the sync running now, and the one queued after it (shared by every rename made meanwhile). */
const folderSyncs = new Map<string, { running: Promise<void>; next: Promise<void> | null }>();

/**
 * Syncs a folder after a rename in it. Renames into one folder share syncs (a group commit):
 * a sync already running may have started before this rename, so this one waits for the next,
 * which starts once that ends and covers every rename made in between — one sync per busy
 * moment instead of one per file.
 */
function syncFolder(dir: string): Promise<void> {
  const state = folderSyncs.get(dir);
  if (state) return (state.next ??= state.running.catch(() => undefined).then(() => startFolderSync(dir)));
  return startFolderSync(dir);
}

function startFolderSync(dir: string): Promise<void> {
  const running = syncPath(dir, constants.O_RDONLY | constants.O_DIRECTORY).finally(() => {
    const state = folderSyncs.get(dir)!;
    if (state.next) {
      // The queued sync is starting now (startFolderSync replaces this entry); nothing to clean.
      return;
    }
    folderSyncs.delete(dir);
  });
  folderSyncs.set(dir, { running, next: null });
  return running;
}

/** Removes what a failed, stopped, dead or fenced-off attempt left at its temporary path (never the output). */
export function discardOutput(out: Pick<OutputPaths, 'temp'>): void {
  try {
    rmSync(out.temp, { recursive: true, force: true });
  } catch {
    // gone already, or not ours to remove (a read-only folder): nothing points at it
  }
}

async function syncPath(path: string, flags: number): Promise<void> {
  const handle = await open(path, flags);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * How an attempt ended, as far as its output is concerned: the fields of the worker's report
 * this reads and rewrites, spelled here because output/ sits below worker/ (the report is a
 * superset and passes as it is).
 */
type Ended = { ok: boolean; result: string | null; error: SerializedError | null };

/**
 * The attempt's outcome once its output is checked: a success whose output is missing or not
 * a regular file fails (its file removed); anything but a success removes it. A success keeps
 * its temporary file for the coordinator to rename once the commit won.
 */
export async function finishOutput<T extends Ended>(out: OutputPaths, outcome: T, how: string, folder: FolderId | null): Promise<T> {
  if (!outcome.ok) {
    discardOutput(out);
    return outcome;
  }
  const error = await checkOutput(out, how, folder);
  if (error === null) return outcome;
  discardOutput(out);
  return { ...outcome, ok: false, result: null, error: { name: error.retryable ? 'Error' : 'PermanentError', message: error.message, retryable: error.retryable } };
}
