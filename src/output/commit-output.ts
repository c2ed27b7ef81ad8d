import { constants, mkdirSync, rmSync } from 'node:fs';
import { lstat, open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { DoneMessage } from '../worker/protocol.js';
import type { OutputPaths } from './output-path.js';

/**
 * The worker's side of a declared output: the attempt writes its temporary path; a success
 * is made durable and renamed onto the output path (atomic: the path holds the old file or
 * the new one, never part of one); anything else removes it. A crash between leaves only
 * the temporary file, which the coordinator (or the next run's recovery) removes.
 */

/** Makes the output's folder before the attempt starts; returns why it could not, or null. */
export function prepareOutput(out: OutputPaths): string | null {
  try {
    mkdirSync(dirname(out.path), { recursive: true });
    return null;
  } catch (err) {
    return `the declared output's folder ${dirname(out.path)} could not be made: ${(err as Error).message}`;
  }
}

/**
 * After a successful command: the temporary file is synced and renamed onto the output path,
 * then its folder is synced, so a power loss after the commit cannot undo it. Returns the
 * error that fails the attempt instead, or null. Asynchronous: the syncs wait on the disk in
 * libuv's threads, never in the event loop that starts the next commands and commits.
 */
export async function commitOutput(out: OutputPaths, how: string): Promise<string | null> {
  let isFile: boolean;
  try {
    isFile = (await lstat(out.temp)).isFile();
  } catch {
    return `declared output not written: ${out.path} (${how})`;
  }
  try {
    if (isFile) await syncPath(out.temp, constants.O_RDONLY);
    await rename(out.temp, out.path);
  } catch (err) {
    discardOutput(out);
    return `declared output could not be moved onto ${out.path}: ${(err as Error).message}`;
  }
  try {
    await syncFolder(dirname(out.path));
  } catch {
    // the rename happened; a folder that cannot be synced (some network file systems) only loses durability
  }
  return null;
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

/** Removes what a failed, stopped or dead attempt left at its temporary path (never the output). */
export function discardOutput(out: OutputPaths): void {
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

/** How an attempt ended, as far as its output is concerned. */
type Ended = Pick<DoneMessage, 'ok' | 'result' | 'error'>;

/** The attempt's outcome once its output is dealt with: a success whose output cannot be committed fails. */
export async function finishOutput<T extends Ended>(out: OutputPaths, outcome: T, how: string): Promise<T> {
  if (!outcome.ok) {
    discardOutput(out);
    return outcome;
  }
  const error = await commitOutput(out, how);
  return error === null ? outcome : { ...outcome, ok: false, result: null, error: { name: 'Error', message: error, retryable: true } };
}
