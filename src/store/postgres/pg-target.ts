import { parse } from 'pg-connection-string';
import { StoreError } from '../../errors.js';
import { MASK, decodeLoosely, isPostgresUrl, redactUrl } from './pg-url.js';

const DEFAULT_SCHEMA = 'splitdance';

/** A `--db postgres://…` value, taken apart once at open. */
export interface PgTarget {
  /** What node-postgres connects with: the URL minus `?schema=` (the password kept). */
  connectionString: string;
  schema: string;
  /** The URL as given, minus any password (see `redactUrl`): safe for messages and `location`. */
  location: string;
  /** `host:port`, for "cannot reach" messages. */
  server: string;
  database: string;
  user: string;
  /** Masks this URL's password wherever it shows up in a text (a driver's error message). */
  scrub(text: string): string;
}

/** An unquoted PostgreSQL identifier, so it needs no escaping in SQL or in messages. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Parses the URL; `schema` (from the caller) wins over `?schema=`, which wins over the default.
 * Where the server is, the database and the user are read by the driver's own parser
 * (pg-connection-string), so messages name what node-postgres connects to.
 */
export function parsePgUrl(raw: string, schemaOption?: string): PgTarget {
  const location = redactUrl(raw);
  if (!isPostgresUrl(raw)) {
    throw new StoreError(`--db ${location} is not a PostgreSQL URL; it must start with postgres:// or postgresql://`);
  }
  const invalid = () =>
    new StoreError(`--db ${location} is not a valid PostgreSQL URL; expected postgres://USER:PASSWORD@HOST:5432/DATABASE (percent-encode @ / ? # : in the password)`);
  const url = parseLikeDriver(raw);
  if (!url) throw invalid();
  const schema = schemaOption ?? url.searchParams.get('schema') ?? DEFAULT_SCHEMA;
  if (!SCHEMA_NAME.test(schema)) {
    throw new StoreError(
      `schema ${JSON.stringify(schema)} in --db ${location} is not a plain lower-case name; use letters, digits and _ (e.g. ?schema=splitdance)`,
    );
  }
  const secrets = secretsOf(raw, url);
  // Only touched when present: rewriting the query re-encodes it (a socket path's slashes).
  if (url.searchParams.has('schema')) url.searchParams.delete('schema');
  const connectionString = url.toString().replace(`@${NO_HOST}/`, '@/');
  const driver = driverView(connectionString);
  if (!driver) throw invalid();
  const host = driver.host || 'localhost';
  const port = driver.port || '5432';
  const user = driver.user || process.env.PGUSER || process.env.USER || 'postgres';
  return {
    connectionString,
    schema,
    location,
    // An IPv6 address of the URL's host part in brackets, as the URL writes it (a `?host=` as given).
    server: host.startsWith('/') ? `socket ${host}` : host.includes(':') && !url.searchParams.has('host') ? `[${host}]:${port}` : `${host}:${port}`,
    database: driver.database || driver.user || 'postgres',
    user,
    scrub(text) {
      let out = text.split(raw).join(location).split(connectionString).join(location);
      for (const s of secrets) out = out.split(s).join(MASK);
      return out;
    },
  };
}

/**
 * Where node-postgres will connect: its own parse of the connection string, without the TLS
 * parameters (`ssl…`, `uselibpqcompat`), which name nothing printed here and whose parse reads
 * certificate files and warns; the driver reads them itself when it connects. Null if the
 * driver's parser refuses the string.
 */
function driverView(connectionString: string): { host: string; port: string; database: string; user: string } | null {
  const url = parseLikeDriver(connectionString);
  if (!url) return null;
  const tls = [...url.searchParams.keys()].filter((k) => k.startsWith('ssl') || k === 'uselibpqcompat');
  for (const k of tls) url.searchParams.delete(k);
  try {
    const c = parse(url.toString().replace(`@${NO_HOST}/`, '@/'));
    return { host: c.host ?? '', port: c.port ?? '', database: c.database ?? '', user: c.user ?? '' };
  } catch {
    return null;
  }
}

/** Stands in for the empty host of `postgresql://user:pw@/db?host=/run/postgresql`, as node-postgres does. */
const NO_HOST = '___splitdance_no_host___';

/** `new URL`, with node-postgres's fallback for a socket URL with credentials and no host; null if it does not parse. */
function parseLikeDriver(raw: string): URL | null {
  try {
    return new URL(raw);
  } catch {
    try {
      return raw.includes('@/') ? new URL(raw.replace('@/', `@${NO_HOST}/`)) : null;
    } catch {
      return null;
    }
  }
}

/** Each form the password may take in a text: as given in the URL and decoded; in the user part and in `?password=`. */
function secretsOf(raw: string, url: URL): string[] {
  const given = [url.password, ...[...url.searchParams].filter(([k]) => /password$/i.test(k)).map(([, v]) => v)];
  const forms = new Set<string>();
  for (const p of given) {
    if (!p) continue;
    forms.add(p);
    forms.add(decodeLoosely(p));
    forms.add(encodeURIComponent(p));
  }
  // The password as typed: between `user:` and the last `@`, even if the parser saw it otherwise.
  const typed = /^[^:]+:\/\/[^:@]*:([^]*)@/.exec(raw)?.[1];
  if (typed) forms.add(typed);
  // Longest first, so a password that contains another form is masked whole.
  return [...forms].filter((f) => f.length > 0).sort((a, b) => b.length - a.length);
}
