import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { StoreError } from '../../errors.js';
import { isPostgresUrl, openExistingStore } from '../open-store.js';
import { BUSY_TIMEOUT_MS, checkIdentity, checkStoreFile, storeError } from './open-sqlite.js';

/**
 * A batch's stored definition, read without a single write to the store — no migration of
 * an older schema, no WAL switch — so `run` can validate every input (and load the handler)
 * before it changes anything. Undefined when there is no store or no such batch.
 */
export async function peekBatch(db: string, name: string): Promise<{ job: unknown; source: string } | undefined> {
  if (isPostgresUrl(db)) return peekPostgres(db, name);
  if (!existsSync(db)) return undefined;
  checkStoreFile(db);
  let conn: Database.Database;
  try {
    conn = new Database(db, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
  } catch (err) {
    throw storeError(err, db);
  }
  try {
    checkIdentity(conn, db);
    if ((conn.pragma('user_version', { simple: true }) as number) === 0) return undefined; // created, never written
    // Every schema version has batches(name, source, job).
    const row = conn.prepare('SELECT job, source FROM batches WHERE name = ?').get(name) as { job: string; source: string } | undefined;
    return row && { job: JSON.parse(row.job), source: row.source };
  } catch (err) {
    throw storeError(err, db);
  } finally {
    conn.close();
  }
}

async function peekPostgres(db: string, name: string): Promise<{ job: unknown; source: string } | undefined> {
  let store;
  try {
    store = await openExistingStore(db, { readonly: true });
  } catch (err) {
    // An older schema cannot be read read-only; PostgreSQL's upgrade is one transaction
    // under an advisory lock, and is then done by this open (a documented exception).
    if (!(err instanceof StoreError && /older schema/.test(err.message))) throw err;
    store = await openExistingStore(db);
  }
  if (!store) return undefined;
  try {
    const batch = await store.findBatch(name);
    return batch && { job: batch.job, source: batch.source };
  } finally {
    await store.close();
  }
}
