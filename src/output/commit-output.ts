import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, renameSync, rmSync, constants } from 'node:fs';
import { dirname } from 'node:path';
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
 * error that fails the attempt instead, or null.
 */
export function commitOutput(out: OutputPaths, how: string): string | null {
  let isFile: boolean;
  try {
    isFile = lstatSync(out.temp).isFile();
  } catch {
    return `declared output not written: ${out.path} (${how})`;
  }
  try {
    if (isFile) syncPath(out.temp, constants.O_RDONLY);
    renameSync(out.temp, out.path);
  } catch (err) {
    discardOutput(out);
    return `declared output could not be moved onto ${out.path}: ${(err as Error).message}`;
  }
  try {
    syncPath(dirname(out.path), constants.O_RDONLY | constants.O_DIRECTORY);
  } catch {
    // the rename happened; a folder that cannot be synced (some network file systems) only loses durability
  }
  return null;
}

/** Removes what a failed, stopped or dead attempt left at its temporary path (never the output). */
export function discardOutput(out: OutputPaths): void {
  try {
    rmSync(out.temp, { recursive: true, force: true });
  } catch {
    // gone already, or not ours to remove (a read-only folder): nothing points at it
  }
}

function syncPath(path: string, flags: number): void {
  const fd = openSync(path, flags);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** How an attempt ended, as far as its output is concerned (the worker's DoneMessage fields). */
interface Ended {
  ok: boolean;
  result: string | null;
  error: { name: string; message: string; retryable: boolean } | null;
}

/** The attempt's outcome once its output is dealt with: a success whose output cannot be committed fails. */
export function finishOutput<T extends Ended>(out: OutputPaths, outcome: T, how: string): T {
  if (!outcome.ok) {
    discardOutput(out);
    return outcome;
  }
  const error = commitOutput(out, how);
  return error === null ? outcome : { ...outcome, ok: false, result: null, error: { name: 'Error', message: error, retryable: true } };
}
