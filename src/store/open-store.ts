import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { StoreError } from '../errors.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { TaskStore } from './task-store.js';

export const DEFAULT_DB = '.splitdance/splitdance.db';

/** `--db`, else `SPLITDANCE_DB`, else `.splitdance/splitdance.db` under the working directory. */
export function resolveDbPath(flag: string | undefined, cwd: string, env: NodeJS.ProcessEnv): string {
  const given = flag ?? env.SPLITDANCE_DB ?? DEFAULT_DB;
  if (/^postgres(ql)?:\/\//.test(given)) {
    throw new StoreError('PostgreSQL stores are not supported by this version yet; use a SQLite file path with --db');
  }
  return isAbsolute(given) ? given : resolve(cwd, given);
}

export function storeExists(path: string): boolean {
  return existsSync(path);
}

/** `readonly` opens without a single write (no WAL switch, no migration, no checkpoint): for --dry-run. */
export function openStore(path: string, options: { create: boolean; readonly?: boolean }): TaskStore {
  return SqliteStore.open(path, options);
}
