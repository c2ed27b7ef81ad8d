/** Reading a store without a write: from a read-only folder, or another user's (open-sqlite.ts decides when). */
import Database from 'better-sqlite3';
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { StoreError } from '../../errors.js';
import { busyTimeoutMs } from '../shared/busy-timeout.js';
import { sqliteAddon } from './addon.js';

type Db = Database.Database;

const BUSY_TIMEOUT_MS = busyTimeoutMs();

/**
 * SQLite reads a WAL store only through its -shm index, which it must create when the last
 * writer has removed it; in a read-only folder (a read-only mount, a snapshot) it cannot,
 * and every read fails with SQLITE_CANTOPEN. Without a -wal file the main file holds every
 * commit, so it is read into memory instead and opened from there (memory: the file's size,
 * paid only in that case). A non-empty -wal file without its index holds commits nothing
 * could read safely: refused.
 */
export function readableOrSnapshot(db: Db, path: string): Db {
  try {
    db.pragma('user_version', { simple: true });
    return db;
  } catch (err) {
    if ((err as { code?: string }).code !== 'SQLITE_CANTOPEN') throw err;
    db.close();
  }
  // A -wal or -shm file this user may not read fails the same way, in a folder it may write.
  const unreadable = sidecarRefused(path, constants.R_OK);
  if (unreadable) throw unreadable;
  return snapshot(path);
}

/**
 * Another user's store, read by a command that only looks: SQLite would make its -wal and
 * -shm files when they are missing (root may, in any folder), and leave them behind. With both
 * there (a run of its owner has it open), SQLite reads through them and makes nothing; without
 * them the main file holds every commit and is read as a snapshot. The owner's last connection
 * closing in the instant between this look and SQLite's open is not covered.
 */
export function readAnotherUsers(path: string): Db {
  if (existsSync(`${path}-wal`) && existsSync(`${path}-shm`)) {
    return new Database(path, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS, nativeBinding: sqliteAddon() });
  }
  return snapshot(path);
}

/** The store read into memory and opened from there: for a store whose -wal holds no commits. */
function snapshot(path: string): Db {
  const wal = `${path}-wal`;
  const walSize = () => (existsSync(wal) ? statSync(wal).size : 0);
  for (let tries = 0; tries < 3; tries++) {
    if (walSize() > 0) {
      throw new StoreError(
        `the store ${path} has recent commits in ${wal} that cannot be read without a writable folder; open it once where it can be written, or copy the store with its -wal file to a writable place`,
      );
    }
    const before = statSync(path);
    const image = readFileSync(path);
    const after = statSync(path);
    if (before.mtimeMs !== after.mtimeMs || before.size !== after.size || walSize() > 0) continue; // a writer elsewhere: read again
    // Header bytes 18–19 (file format versions) say WAL; an in-memory image has no log, so read it as a rollback-journal file.
    if (image.length >= 20) image[18] = image[19] = 1;
    return new Database(image, { readonly: true, nativeBinding: sqliteAddon() });
  }
  throw new StoreError(`the store ${path} kept changing while it was being read; run the command again`);
}

/**
 * The store's -wal or -shm file that this user may not use as `mode` asks (R_OK, W_OK), as a
 * StoreError naming it; null when both are usable or absent. SQLite reports either as "unable
 * to open database file", which would blame the store or its folder.
 */
export function sidecarRefused(path: string, mode: number): StoreError | null {
  for (const file of [`${path}-wal`, `${path}-shm`]) {
    try {
      accessSync(file, mode);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') continue;
      const what = mode & constants.W_OK ? 'read and written' : 'read';
      return new StoreError(
        `the store ${path} cannot be opened: its ${file} cannot be ${what} by this user (${code}); give it the store file's owner and permissions, or run as that user`,
      );
    }
  }
  return null;
}
