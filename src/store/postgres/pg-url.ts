import { StoreError } from '../../errors.js';

export const DEFAULT_SCHEMA = 'splitdance';

/** A `--db postgres://…` value, taken apart once at open. */
export interface PgTarget {
  /** What node-postgres connects with: the URL minus `?schema=` (the password kept). */
  connectionString: string;
  schema: string;
  /** The URL as given, minus any password: safe for messages and `location`. */
  location: string;
  /** `host:port`, for "cannot reach" messages. */
  server: string;
  database: string;
  user: string;
}

/** An unquoted PostgreSQL identifier, so it needs no escaping in SQL or in messages. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

/** Parses the URL; `schema` (from the caller) wins over `?schema=`, which wins over the default. */
export function parsePgUrl(raw: string, schemaOption?: string): PgTarget {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new StoreError(
      `--db ${maskPassword(raw)} is not a valid PostgreSQL URL; expected postgres://USER:PASSWORD@HOST:5432/DATABASE`,
    );
  }
  if (!isPostgresUrl(raw)) {
    throw new StoreError(`--db ${redact(url)} is not a PostgreSQL URL; it must start with postgres:// or postgresql://`);
  }
  const schema = schemaOption ?? url.searchParams.get('schema') ?? DEFAULT_SCHEMA;
  if (!SCHEMA_NAME.test(schema)) {
    throw new StoreError(
      `schema ${JSON.stringify(schema)} in --db ${redact(url)} is not a plain lower-case name; use letters, digits and _ (e.g. ?schema=splitdance)`,
    );
  }
  const location = redact(url);
  // Only touched when present: rewriting the query re-encodes it (a socket path's slashes).
  if (url.searchParams.has('schema')) url.searchParams.delete('schema');
  const host = url.searchParams.get('host') ?? (decodeURIComponent(url.hostname) || 'localhost');
  const port = url.searchParams.get('port') ?? (url.port || '5432');
  return {
    connectionString: url.toString(),
    schema,
    location,
    server: host.startsWith('/') ? `socket ${host}` : `${host}:${port}`,
    database: decodeURIComponent(url.pathname.slice(1)) || decodeURIComponent(url.username) || 'postgres',
    user: decodeURIComponent(url.username) || process.env.PGUSER || process.env.USER || 'postgres',
  };
}

/** The URL without its password (in the user part or as `?password=`). */
function redact(url: URL): string {
  const copy = new URL(url.toString());
  copy.password = '';
  if (copy.searchParams.has('password')) copy.searchParams.delete('password');
  return copy.toString();
}

/** For a string that does not even parse: hide whatever sits between `user:` and `@`. */
function maskPassword(raw: string): string {
  return raw.replace(/^([a-z]+:\/\/[^:/@]*):[^@]*@/i, '$1@');
}
