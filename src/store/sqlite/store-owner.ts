/**
 * Whose store this is. Whoever can write a SQLite store — its file, its -wal, -shm or -journal,
 * or the folder they are in — chooses the commands every `run` and `worker` on it runs, as the
 * user running them (docs/trust-model.md). So a store is used only when each of those belongs
 * to that user (or root, or an owner trusted by name with --trust-store-owner) and no one else
 * may write it. Commands that only look may read anyone's store (see `isAnotherUsers`).
 */
import { createRequire } from 'node:module';
import { chmodSync, closeSync, constants, existsSync, fchmodSync, fstatSync, lstatSync, openSync, realpathSync, statSync, type Stats } from 'node:fs';
import { basename, dirname } from 'node:path';
import { StoreError, UsageError } from '../../errors.js';

/** Users whose stores are used as one's own: uids, besides the user running and root. */
export type TrustedOwners = readonly number[];

const me = (): number | undefined => process.geteuid?.();

/** `id`, run only to name a user or look one up: the commands that only look never load child_process (test/cli/start-up-loads.test.ts). */
function id(args: string[]): string | null {
  const { spawnSync } = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
  const found = spawnSync('id', args, { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : null;
}

/** The companions SQLite keeps beside a store file; each is as much the store as the file. */
const companions = (file: string): string[] => [`${file}-wal`, `${file}-shm`, `${file}-journal`];

/** Whether the store file belongs to someone other than the user running (an inspection then reads it without a write). */
export function isAnotherUsers(path: string): boolean {
  const uid = me();
  if (uid === undefined) return false;
  try {
    return statSync(path).uid !== uid;
  } catch {
    return false;
  }
}

/**
 * Refuses (StoreError, exit 4) a store that another user owns or others may write, before
 * SQLite opens anything, so not even a -wal or -shm is made for it. The folder is looked at
 * first: when it is the user's (or root's) and no one else may write it, no one else can
 * replace a file in it after this check either. Each file is looked at with lstat (a symlink
 * is refused), never opened: see below. `narrow`: a writing open also narrows the user's own
 * files that others may read to 0600, and its own `.splitdance` folder to 0700, as log
 * folders are; inspections change nothing.
 */
export function checkStoreOwners(path: string, trusted: TrustedOwners, { narrow }: { narrow: boolean }): void {
  const uid = me();
  if (uid === undefined) return; // no owners to compare (Windows)
  const ok = (owner: number) => owner === uid || owner === 0 || trusted.includes(owner);
  const exists = existsSync(path);
  const real = exists ? realpathSync(path) : path;
  checkFolder(dirname(real), uid, ok, narrow);
  // A missing store is created exclusively (open-sqlite.ts); companions left by another user would still be read.
  for (const file of exists ? [real, ...companions(real)] : companions(real)) {
    // lstat, never open: closing any descriptor of a store file drops every POSIX lock this
    // process holds on it (SQLite's other connections here, say), and SQLite's locking with
    // it. The folder was checked first: no one else can swap a file in it after this look.
    const st = lstatOrNull(file);
    if (st === null) continue;
    if (st.isSymbolicLink()) {
      throw new StoreError(`${file} is a symlink: a store's files are never used through one that another user could point anywhere; remove it, or give --db the real path`);
    }
    if (!ok(st.uid)) throw notYours(`the store ${file === real ? '' : 'file '}${file}`, st.uid, uid);
    if ((st.mode & 0o022) !== 0) {
      throw new StoreError(
        `the store file ${file} may be written by other users (mode ${modeText(st)}): they could change what its batches run, as you; check it, then narrow it (chmod go-w ${file}), or keep the store in a folder of your own`,
      );
    }
    if (narrow && st.uid === uid && (st.mode & 0o077) !== 0) chmodSync(file, 0o600);
  }
}

function lstatOrNull(file: string): Stats | null {
  try {
    return lstatSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function checkFolder(dir: string, uid: number, ok: (owner: number) => boolean, narrow: boolean): void {
  let fd: number;
  try {
    fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // created 0700 with the store
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!ok(st.uid)) throw notYours(`the store's folder ${dir}`, st.uid, uid);
    const othersMayWrite = (st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0;
    if (othersMayWrite) {
      throw new StoreError(
        `the store's folder ${dir} may be written by other users (mode ${modeText(st)}): ` +
          `they could replace the store and run commands as you; narrow it (chmod go-w ${dir}) or keep the store in a folder of your own`,
      );
    }
    if (narrow && basename(dir) === '.splitdance' && st.uid === uid && (st.mode & 0o077) !== 0) fchmodSync(fd, 0o700);
  } finally {
    closeSync(fd);
  }
}

function notYours(what: string, owner: number, uid: number): StoreError {
  const name = userName(owner);
  const shown = name === null ? `uid ${owner}` : `${name} (uid ${owner})`;
  return new StoreError(
    `${what} belongs to ${shown}, not to you (${userName(uid) ?? `uid ${uid}`}): whoever owns a store chooses the commands its batches run, as you; ` +
      `run this as ${name ?? `uid ${owner}`}, or add --trust-store-owner ${name ?? owner} if you have checked the store and trust that user (status, tasks and show may read it without)`,
  );
}

/** The user's name, or null for a uid without one. */
function userName(uid: number): string | null {
  return id(['-nu', String(uid)]) || null;
}

/**
 * `--trust-store-owner` values (user names or numeric uids) as uids, checked once before
 * anything is opened: a name this machine does not know is a usage error, never a trust in nobody.
 */
export function trustedOwners(given: readonly string[] | undefined): TrustedOwners {
  return (given ?? []).map((value) => {
    const text = value.trim();
    if (/^\d+$/.test(text)) return Number(text);
    const found = text === '' ? null : id(['-u', '--', text]);
    if (found === null || !/^\d+$/.test(found)) {
      throw new UsageError(`--trust-store-owner ${JSON.stringify(value)} names no user on this machine; give a user name or a numeric uid`);
    }
    return Number(found);
  });
}

const modeText = (st: Stats) => (st.mode & 0o7777).toString(8).padStart(4, '0');
