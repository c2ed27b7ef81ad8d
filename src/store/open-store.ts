import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { StoreError, UsageError } from '../errors.js';
// pg-url.ts needs no driver: recognising and redacting a URL never loads node-postgres.
import { isPostgresUrl, looksLikeUrl, redactUrl } from './postgres/pg-url.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { TaskStore } from './task-store.js';

export { isPostgresUrl };

export const DEFAULT_DB = '.splitdance/splitdance.db';

/**
 * `--db`, else `SPLITDANCE_DB`, else `.splitdance/splitdance.db` under the working directory.
 * A PostgreSQL URL (any letter case) stays a URL; any other `scheme://…` is refused rather
 * than becoming a SQLite file named after it.
 */
export function resolveDbPath(flag: string | undefined, cwd: string, env: NodeJS.ProcessEnv): string {
  if (flag !== undefined && flag.trim() === '') throw new UsageError('--db is empty; give a store file path or a postgres:// URL, or leave --db out');
  // An empty variable is an unset one (as NO_COLOR and the shell's own conventions go).
  const fromEnv = env.SPLITDANCE_DB === undefined || env.SPLITDANCE_DB.trim() === '' ? undefined : env.SPLITDANCE_DB;
  const given = flag ?? fromEnv ?? DEFAULT_DB;
  if (isPostgresUrl(given)) return given;
  if (looksLikeUrl(given)) {
    throw new UsageError(`--db ${redactUrl(given)} is not a store splitdance knows; give a file path or a postgres:// URL`);
  }
  return isAbsolute(given) ? given : resolve(cwd, given);
}

/**
 * Opens the store if it exists (a SQLite file, or a PostgreSQL schema that holds one);
 * null when there is none yet, so `run` can load the handler before creating anything.
 */
export async function openExistingStore(db: string, options: { readonly?: boolean } = {}): Promise<TaskStore | null> {
  if (!isPostgresUrl(db) && !existsSync(db)) return null;
  try {
    return await openStore(db, { create: false, ...options });
  } catch (err) {
    if (err instanceof StoreError && err.code === 'NO_STORE') return null;
    throw err;
  }
}

/** Where attempt logs go: beside a SQLite store; under the working directory for a shared server. */
export function logRoot(db: string, cwd: string): string {
  return isPostgresUrl(db) ? join(cwd, '.splitdance', 'logs') : join(dirname(db), 'logs');
}

/** A store's name for anything printed or stored: a URL's password masked (see `redactUrl`). */
export function describeStore(db: string): string {
  return redactUrl(db);
}

/**
 * Opens a store. `readonly` (SQLite) opens without a single write (no WAL switch, no
 * migration, no checkpoint): for --dry-run.
 */
export async function openStore(db: string, options: { create: boolean; readonly?: boolean }): Promise<TaskStore> {
  if (isPostgresUrl(db)) {
    const { PostgresStore } = await import('./postgres/pg-store.js').catch((err: Error) => {
      throw new StoreError(`the PostgreSQL backend could not be loaded: ${err.message}`);
    });
    return PostgresStore.open(db, { create: options.create, readonly: options.readonly, clock: 'server' });
  }
  return SqliteStore.open(db, options);
}
