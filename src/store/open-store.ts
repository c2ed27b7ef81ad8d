/**
 * Where a store is, and the one way to open it for each purpose:
 *
 * - create: `openStore(db, 'create')` — `run`, which makes the store if it is missing.
 * - write: `openStore(db, 'write')` — the commands that change an existing store.
 * - existing: `openStore(db, 'existing')` — a store that may not exist yet: null instead of an
 *   error (`run --dry-run`, `worker --follow`, a worker waiting for its batch).
 * - read: `openStore(db, 'read')` — the commands that only look (status, tasks, batches, …).
 * - peek: `peekBatch(db, name)` — a batch's stored definition, read without a single write.
 *
 * Only `read` (and `inspect`) may open another user's SQLite store: every other open leads to
 * running what the store holds, and refuses a store that is not the user's own or that others
 * may write, unless its owner is in `trust` (--trust-store-owner; store-owner.ts).
 *
 * Every writing open upgrades an older schema; a read-only open refuses it (`isOldSchema`).
 */
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { StoreError, UsageError } from '../errors.js';
// pg-url.ts needs no driver: recognising and redacting a URL never loads node-postgres.
import { isPostgresUrl, looksLikeUrl } from './postgres/pg-url.js';
import { describeStore } from './describe-store.js';
import type { PeekedBatch } from './records.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { TaskStore } from './task-store.js';
import { trustedOwners, type TrustedOwners } from './sqlite/store-owner.js';

export { describeStore, isPostgresUrl, trustedOwners, type TrustedOwners };

/** How an open treats a store's owner: `trust` names owners used as one's own; `inspect` only looks, so any owner's store may be read. */
interface OwnerOptions {
  trust?: TrustedOwners;
  inspect?: boolean;
}

const DEFAULT_DB = '.splitdance/splitdance.db';

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
    throw new UsageError(`--db ${describeStore(given)} is not a store splitdance knows; give a file path or a postgres:// URL`);
  }
  return isAbsolute(given) ? given : resolve(cwd, given);
}

/** Where attempt logs go: beside a SQLite store; under the working directory for a shared server. */
export function logRoot(db: string, cwd: string): string {
  return isPostgresUrl(db) ? join(cwd, '.splitdance', 'logs') : join(dirname(db), 'logs');
}

/**
 * A read-only open found a schema older than this build: both backends say so with this
 * code, and a writable open would upgrade it.
 */
export function isOldSchema(err: unknown): boolean {
  return err instanceof StoreError && err.code === 'OLD_SCHEMA';
}

/**
 * What an open is for: `create` makes the store if it is missing; `write` opens an existing
 * one for changing; `existing` opens one that may not exist yet (null when there is none);
 * `read` only looks. Every writing open upgrades an older schema.
 */
export type OpenMode = 'create' | 'write' | 'existing' | 'read';

/** `existing`: `readonly` (SQLite) opens without a single write (no WAL switch, no migration, no checkpoint). */
export type ExistingOptions = { readonly?: boolean } & OwnerOptions;

/**
 * Opens the store at `db` for `mode` (see OpenMode):
 *
 * - `create`, `write`: for writing; an older schema is upgraded by this open.
 * - `existing`: the store if it exists (a SQLite file, or a PostgreSQL schema that holds one);
 *   null when there is none yet, so `run` can load the handler before creating anything.
 *   With `readonly` it refuses an older schema rather than upgrade it (--dry-run).
 * - `read`: for reading only, so a command that only looks works on a store it cannot write
 *   (a read-only mount, a backup, another user's store). A store with an older schema is
 *   opened for writing once instead, so the upgrade that any command would do still happens
 *   where it can.
 */
export async function openStore(db: string, mode: 'create' | 'write', options?: { trust?: TrustedOwners }): Promise<TaskStore>;
export async function openStore(db: string, mode: 'existing', options?: ExistingOptions): Promise<TaskStore | null>;
export async function openStore(db: string, mode: 'read'): Promise<TaskStore>;
export async function openStore(db: string, mode: OpenMode, options: ExistingOptions = {}): Promise<TaskStore | null> {
  switch (mode) {
    case 'create':
    case 'write':
      return open(db, { create: mode === 'create', trust: options.trust });
    case 'existing':
      return openExisting(db, options);
    case 'read':
      return openForReading(db);
  }
}

async function openExisting(db: string, options: ExistingOptions): Promise<TaskStore | null> {
  if (!isPostgresUrl(db) && !existsSync(db)) return null;
  try {
    return await open(db, { create: false, ...options });
  } catch (err) {
    if (err instanceof StoreError && err.code === 'NO_STORE') return null;
    throw err;
  }
}

async function openForReading(db: string): Promise<TaskStore> {
  try {
    return await open(db, { create: false, readonly: true, inspect: true });
  } catch (err) {
    // The upgrade writes, so it is for the user's own store only.
    if (isOldSchema(err)) return open(db, { create: false });
    throw err;
  }
}

/**
 * A batch's stored definition, read without a single write to the store — no migration of
 * an older schema, no WAL switch — so `run` can validate every input (and load the handler)
 * before it changes anything. Undefined when there is no store or no such batch.
 */
export async function peekBatch(db: string, name: string, trust: TrustedOwners = []): Promise<PeekedBatch | undefined> {
  if (isPostgresUrl(db)) return peekPostgres(db, name);
  if (!existsSync(db)) return undefined;
  // Only `run` peeks: the other commands do not load it.
  return (await import('./sqlite/sqlite-peek.js')).peekSqlite(db, name, trust);
}

async function peekPostgres(db: string, name: string): Promise<PeekedBatch | undefined> {
  let store;
  try {
    store = await openStore(db, 'existing', { readonly: true });
  } catch (err) {
    // An older schema cannot be read read-only; PostgreSQL's upgrade is one transaction
    // under an advisory lock, and is then done by this open (a documented exception).
    if (!isOldSchema(err)) throw err;
    store = await openStore(db, 'existing');
  }
  if (!store) return undefined;
  try {
    const batch = await store.findBatch(name);
    return batch && { job: batch.job, source: batch.source };
  } finally {
    await store.close();
  }
}

/** The one place a backend is chosen: by the location's form. */
async function open(db: string, options: { create: boolean; readonly?: boolean } & OwnerOptions): Promise<TaskStore> {
  if (isPostgresUrl(db)) {
    const { PostgresStore } = await import('./postgres/pg-store.js').catch((err: Error) => {
      throw new StoreError(`the PostgreSQL backend could not be loaded: ${err.message}`);
    });
    return PostgresStore.open(db, { create: options.create, readonly: options.readonly, clock: 'server' });
  }
  return SqliteStore.open(db, options);
}
