import Database from 'better-sqlite3';
import { chmodSync, closeSync, constants, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { StoreError } from '../../errors.js';
import { failpointValue } from '../failpoint.js';
import { loadMigrations, newestVersion } from '../shared/migrations.js';
import { checkStoreOwners, isAnotherUsers, type TrustedOwners } from './store-owner.js';
import { readAnotherUsers, readableOrSnapshot, sidecarRefused } from './read-only.js';
import { inPackage } from '../../package-root.js';
import { busyTimeoutMs } from '../shared/busy-timeout.js';
import { sqliteAddon } from './addon.js';

type Db = Database.Database;

const MIGRATIONS_DIR = inPackage('src/store/sqlite/migrations');

/** Milliseconds a writer waits for another's lock before the command fails with exit 4. */
export const BUSY_TIMEOUT_MS = busyTimeoutMs();

/** Read once: the migrations this build knows, and so the newest schema it understands. */
const MIGRATIONS = loadMigrations(MIGRATIONS_DIR);
const SCHEMA_VERSION = newestVersion(MIGRATIONS);

/** How a store is opened: see open-store.ts for who opens it which way. */
export interface SqliteOpenOptions {
  create: boolean;
  readonly?: boolean;
  /**
   * A command that only looks (status, tasks, show, …): it runs nothing stored, so it may read
   * another user's store, and then reads it without a write (no -wal or -shm made). Implies
   * `readonly`. Every other open refuses another user's store (store-owner.ts).
   */
  inspect?: boolean;
  /** Owners whose stores are used as the user's own (--trust-store-owner). */
  trust?: TrustedOwners;
}

/**
 * Opens (creating if needed) a splitdance SQLite store. Everything about the file is
 * checked with reads before the first write, so a corrupt, foreign or newer store is
 * refused without a byte of it changing, and so is a store another user owns or may write.
 */
export function openSqlite(path: string, { create, inspect = false, readonly = inspect, trust = [] }: SqliteOpenOptions): Db {
  const exists = existsSync(path);
  if (!exists && !create) {
    throw new StoreError(`no store at ${path}: run \`splitdance run <source>\` first, or point --db at an existing store`, 'NO_STORE');
  }
  if (exists) checkStoreFile(path);
  // Before SQLite opens anything, and before a new store is created in a folder others may write.
  if (!inspect) checkStoreOwners(path, trust, { narrow: !readonly });
  if (readonly && exists && statSync(path).size === 0) {
    // An empty file holds no store yet; a command that only reads must not make it one.
    throw new StoreError(`no store at ${path}: the file is empty; run \`splitdance run <source>\` first, or point --db at an existing store`, 'NO_STORE');
  }
  if (!exists) createStoreFile(path);
  let db: Db;
  try {
    if (inspect && isAnotherUsers(path)) db = readAnotherUsers(path);
    else db = new Database(path, { timeout: BUSY_TIMEOUT_MS, readonly, nativeBinding: sqliteAddon() });
    if (readonly) db = readableOrSnapshot(db, path);
  } catch (err) {
    throw storeError(err, path);
  }
  try {
    checkIdentity(db, path);
    if (readonly) {
      const version = db.pragma('user_version', { simple: true }) as number;
      // An empty file (or one created and never written) is no store: a reading command must
      // not turn it into one, as the upgrade of an older schema below would.
      if (version === 0) throw new StoreError(`${path} holds no splitdance store yet (an empty database); run \`splitdance run <source>\` with it first, or point --db at an existing store`, 'NO_STORE');
      if (version < SCHEMA_VERSION) {
        throw new StoreError(`the store ${path} has an older schema (${version}); run without --dry-run once to upgrade it`, 'OLD_SCHEMA');
      }
      return db;
    }
    useWal(db);
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    migrate(db);
    const pages = failpointValue('pages');
    if (pages !== null) db.pragma(`max_page_count = ${pages}`);
  } catch (err) {
    db.close();
    throw storeError(err, path);
  }
  return db;
}


/**
 * Switches a new store to WAL. SQLite answers SQLITE_BUSY at once, without its busy handler,
 * when another connection is switching the same new file at that moment (several `run`s
 * creating one store together), so the switch is retried here for up to the busy timeout.
 * A store already in WAL needs no switch and takes no lock.
 */
function useWal(db: Db): void {
  if (db.pragma('journal_mode', { simple: true }) === 'wal') return;
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw err;
      Atomics.wait(PAUSE, 0, 0, 5 + Math.random() * 10);
    }
  }
}
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/**
 * A store is a regular file (or a symlink to one). A FIFO would block every command forever,
 * and SQLite would write a `-journal` beside a device such as /dev/null: refused before
 * SQLite opens anything.
 */
export function checkStoreFile(path: string): void {
  const st = statSync(path);
  if (st.isDirectory()) throw new StoreError(`store path ${path} is a directory; give --db a file path such as ${path}/splitdance.db`);
  if (!st.isFile()) {
    // SQLite would open a device (/dev/null) and put its journal beside it, even to read.
    const kind = st.isFIFO() ? 'a FIFO' : st.isSocket() ? 'a socket' : 'a device';
    throw new StoreError(`store path ${path} is ${kind}, not a store file; give --db the path of a store file (a new one is created)`);
  }
}

function createStoreFile(path: string): void {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    // Created empty with 0600 before SQLite opens it, so no window exists where it is wider.
    closeSync(openSync(path, 'wx', 0o600));
    chmodSync(path, 0o600);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code !== 'EEXIST') throw new StoreError(`cannot create the store at ${path}: ${e.message}; choose a writable place with --db`);
    // EEXIST for a path that does not exist is a dangling symlink: SQLite would create its
    // target with the umask's mode (0644), so the target is created here first, 0600.
    if (!existsSync(path)) createLinkTarget(path);
  }
}

function createLinkTarget(path: string): void {
  try {
    closeSync(openSync(path, constants.O_WRONLY | constants.O_CREAT, 0o600));
    chmodSync(path, 0o600);
  } catch (err) {
    throw new StoreError(`cannot create the store at ${path} (a symlink to a missing file): ${(err as Error).message}; choose a writable place with --db`);
  }
}

/** The identity the store was given when it was created (migration 006). */
export function readIdentity(db: Db): string {
  const row = db.prepare('SELECT id FROM store_identity WHERE one = 1').get() as { id: string } | undefined;
  if (!row) throw new StoreError('the store has lost its identity row (store_identity); was it changed outside splitdance? Restore it from a backup');
  return row.id;
}

/** Tables every splitdance schema version has; a database lacking them is someone else's. */
const OWN_TABLES = ['batches', 'tasks', 'attempts'];

export function checkIdentity(db: Db, path: string): void {
  // One statement, so one snapshot: read apart, a store another process creates meanwhile
  // could show version 0 (before its migration commits) and then its new tables (after).
  const row = db
    .prepare("SELECT (SELECT user_version FROM pragma_user_version) AS version, (SELECT json_group_array(name) FROM sqlite_master WHERE type = 'table') AS tables")
    .get() as { version: number; tables: string };
  const version = row.version;
  if (version > SCHEMA_VERSION) {
    throw new StoreError(
      `the store ${path} has schema version ${version}, newer than this splitdance understands (${SCHEMA_VERSION}); upgrade splitdance`,
    );
  }
  const tables = new Set(JSON.parse(row.tables) as string[]);
  const ours = version === 0 ? tables.size === 0 : OWN_TABLES.every((t) => tables.has(t));
  if (!ours) {
    throw new StoreError(`${path} is an SQLite database but not a splitdance store; point --db at another file`);
  }
}

function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  const pending = MIGRATIONS.filter((m) => m.version > current);
  if (pending.length === 0) return;
  db.exec('BEGIN IMMEDIATE');
  try {
    // Re-read under the write lock: a concurrent opener may have migrated meanwhile.
    const locked = db.pragma('user_version', { simple: true }) as number;
    for (const m of pending) {
      if (m.version <= locked) continue;
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    }
    db.exec('COMMIT');
  } catch (err) {
    db.exec('ROLLBACK');
    throw err;
  }
}

/** The folder SQLite puts temporary files in: the first of these that is set (it then tries /var/tmp, /usr/tmp, /tmp). */
const sqliteTempDir = () => process.env.SQLITE_TMPDIR || process.env.TMPDIR || '/var/tmp';

/**
 * A read-only connection met a hot rollback journal: a writer was killed mid-transaction
 * and only a connection that may write can roll it back (SQLITE_READONLY_ROLLBACK).
 */
export function isHotJournal(err: unknown): boolean {
  return (err as { code?: string }).code === 'SQLITE_READONLY_ROLLBACK';
}

/** Maps a driver error to a StoreError whose message names the file and the fix. */
export function storeError(err: unknown, path: string): Error {
  if (err instanceof StoreError) return err;
  const e = err as { code?: string; message?: string };
  if (isHotJournal(err)) {
    return new StoreError(
      `the store ${path} was left mid-write by a killed process (its rollback journal ${path}-journal is still there), and this command only reads; \`splitdance run\` with this store rolls it back, then run this again`,
    );
  }
  // Extended codes (SQLITE_IOERR_WRITE, SQLITE_READONLY_DBMOVED, …) are classified by their primary code.
  const primary = typeof e.code === 'string' ? e.code.split('_').slice(0, 2).join('_') : '';
  switch (primary) {
    case 'SQLITE_BUSY':
    case 'SQLITE_LOCKED':
      return new StoreError(
        `the store ${path} stayed locked by another process for ${BUSY_TIMEOUT_MS} ms; retry when it finishes, or check for a stuck process holding it`,
      );
    case 'SQLITE_NOTADB':
      return new StoreError(`${path} is not an SQLite database (or is encrypted); point --db at a splitdance store`);
    case 'SQLITE_CORRUPT':
      return new StoreError(`the store ${path} is corrupt; restore it from a backup or move it aside and start again`);
    case 'SQLITE_READONLY':
    case 'SQLITE_CANTOPEN':
    case 'SQLITE_PERM':
    case 'SQLITE_AUTH':
      return (
        sidecarRefused(path, constants.R_OK | constants.W_OK) ??
        new StoreError(`the store ${path} cannot be written (${e.message}); fix its permissions or use --db`)
      );
    case 'SQLITE_FULL':
      // Enqueueing a large source stages its rows in a temporary file (see sqlite-enqueue.ts).
      return new StoreError(
        `the disk holding ${path} is full, or the temporary folder SQLite uses (${sqliteTempDir()}) is; free space and run again (nothing was half-written)`,
      );
    case 'SQLITE_IOERR':
      return new StoreError(`I/O error on the store ${path} (${e.message})`);
    default:
      return err instanceof Error ? err : new Error(String(err));
  }
}
