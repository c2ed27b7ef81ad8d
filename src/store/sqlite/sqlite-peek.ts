/** A batch's stored definition read from a SQLite store without a single write, whatever its schema version. */
import Database from 'better-sqlite3';
import type { PeekedBatch } from '../records.js';
import { BUSY_TIMEOUT_MS, checkIdentity, checkStoreFile, storeError } from './open-sqlite.js';
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
  let conn: Database.Database;
  try {
    conn = new Database(path, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS, nativeBinding: sqliteAddon() });
  } catch (err) {
    throw storeError(err, path);
  }
  try {
    checkIdentity(conn, path);
    if ((conn.pragma('user_version', { simple: true }) as number) === 0) return undefined; // created, never written
    const row = conn.prepare(PEEK_SQL.batchDefinition).get(name) as { job: string; source: string } | undefined;
    return row && { job: JSON.parse(row.job), source: row.source };
  } catch (err) {
    throw storeError(err, path);
  } finally {
    conn.close();
  }
}
