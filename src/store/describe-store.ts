// pg-url.ts needs no driver: recognising and redacting a URL never loads node-postgres, nor
// (this module importing nothing else) the SQLite driver, so every command may load it at start.
import { redactUrl } from './postgres/pg-url.js';

/**
 * A store's name for anything printed, stored or shown in the process list: a PostgreSQL URL
 * with every password masked (see `redactUrl`), any other `scheme://…` text likewise, a SQLite
 * path as it is.
 */
export function describeStore(db: string): string {
  return redactUrl(db);
}
