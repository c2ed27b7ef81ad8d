/**
 * A batch's stored definition read from a SQLite store without a single write, whatever its
 * schema version; only a killed writer's hot journal is rolled back first (see rollBack).
 */
import Database from 'better-sqlite3';
import type { PeekedBatch } from '../records.js';
import { BUSY_TIMEOUT_MS, checkIdentity, checkStoreFile, isHotJournal, storeError } from './open-sqlite.js';
import { sqliteAddon } from './addon.js';
import { checkStoreOwners, type TrustedOwners } from './store-owner.js';

/**
 * The statements a peek runs. Nothing is migrated first, so each must hold on every schema
 * version this build can meet (never prepared with the store's own, in statements.ts).
 */
const PEEK_SQL = {
  /** ?name — every schema version has batches(name, source, job). */
  batchDefinition: 'SELECT job, source FROM batches WHERE name = ?',
} as const;

/**
 * Opens its own read-only connection — no migration of an older schema, no WAL switch — so
 * `run` can validate every input (and load the handler) before it changes anything; the
 * store's own open would upgrade the schema. Undefined for a store created and never written,
 * or without that batch. The caller has checked that `path` exists. What it reads is about to
 * run, so another user's store is refused first, as every open but an inspection's is.
 */
export function peekSqlite(path: string, name: string, trust: TrustedOwners): PeekedBatch | undefined {
  checkStoreFile(path);
  checkStoreOwners(path, trust, { narrow: false });
  try {
    return peekOnce(path, name);
  } catch (err) {
    if (!isHotJournal(err)) throw storeError(err, path);
  }
  rollBack(path);
  try {
    return peekOnce(path, name);
  } catch (err) {
    throw storeError(err, path);
  }
}

function peekOnce(path: string, name: string): PeekedBatch | undefined {
  const conn = new Database(path, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS, nativeBinding: sqliteAddon() });
  try {
    checkIdentity(conn, path);
    if ((conn.pragma('user_version', { simple: true }) as number) === 0) return undefined; // created, never written
    const row = conn.prepare(PEEK_SQL.batchDefinition).get(name) as { job: string; source: string } | undefined;
    return row && { job: JSON.parse(row.job), source: row.source };
  } finally {
    conn.close();
  }
}

/**
 * A store whose creator was killed while switching it to WAL (its one rollback-journal write)
 * has a hot journal, which a read-only connection may not roll back. The run about to write
 * the store would roll it back on its own open; it is done here first, by a connection that
 * runs one read, so the peek sees the store as it was committed. Nothing committed changes.
 */
function rollBack(path: string): void {
  const conn = new Database(path, { fileMustExist: true, timeout: BUSY_TIMEOUT_MS, nativeBinding: sqliteAddon() });
  try {
    conn.prepare('SELECT count(*) FROM sqlite_master').get(); // the first read rolls a hot journal back
  } finally {
    conn.close();
  }
}
