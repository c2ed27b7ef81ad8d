import { StoreError } from '../../errors.js';

export const DEFAULT_SCHEMA = 'splitdance';

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

/** What stands in for a password in anything printed or stored. */
const MASK = '***';

/** A URL's scheme, as far as splitdance cares: a word of 2+ letters and `://`. */
const SCHEME = /^([a-z][a-z0-9+.-]+:\/\/)([^]*)$/i;

/** `postgres://…` or `postgresql://…`, in any letter case (SPEC §9): a shared PostgreSQL store. */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

/** Anything of the form `scheme://…`, which is never meant as a file path. */
export function looksLikeUrl(value: string): boolean {
  return SCHEME.test(value);
}

/**
 * The one redaction of a store's name: `scheme://…` text with every password replaced by
 * `***`, the rest as given. Works on the text, not on a parsed URL, so that it also covers
 * URLs that do not parse and passwords holding an unencoded `@`, `/`, `?` or `#`: everything
 * between the first `:` after `//` and the LAST `@` counts as the password. That may hide
 * more than the password (an `@` in a query value), never less. Every `…password=` query
 * parameter (`password`, `sslpassword`, however percent-encoded) loses its value up to the
 * next `&`. Anything else is returned as it is (a SQLite path).
 */
export function redactUrl(text: string): string {
  const m = SCHEME.exec(text);
  if (!m) return text;
  const scheme = m[1]!;
  let rest = m[2]!;
  const at = rest.lastIndexOf('@');
  const colon = rest.indexOf(':');
  if (at >= 0 && colon >= 0 && colon < at) rest = `${rest.slice(0, colon + 1)}${MASK}${rest.slice(at)}`;
  const q = rest.indexOf('?');
  if (q < 0) return scheme + rest;
  const params = rest
    .slice(q + 1)
    .split('&')
    .map((p) => {
      const eq = p.indexOf('=');
      return eq >= 0 && /password$/i.test(decodeLoosely(p.slice(0, eq)).trim()) ? `${p.slice(0, eq)}=${MASK}` : p;
    });
  return `${scheme}${rest.slice(0, q)}?${params.join('&')}`;
}

function decodeLoosely(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Parses the URL; `schema` (from the caller) wins over `?schema=`, which wins over the default. */
export function parsePgUrl(raw: string, schemaOption?: string): PgTarget {
  const location = redactUrl(raw);
  if (!isPostgresUrl(raw)) {
    throw new StoreError(`--db ${location} is not a PostgreSQL URL; it must start with postgres:// or postgresql://`);
  }
  const url = parseLikeDriver(raw);
  if (!url) {
    throw new StoreError(
      `--db ${location} is not a valid PostgreSQL URL; expected postgres://USER:PASSWORD@HOST:5432/DATABASE (percent-encode @ / ? # : in the password)`,
    );
  }
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
  const host = url.searchParams.get('host') ?? ((url.hostname === NO_HOST ? '' : decodeURIComponent(url.hostname)) || 'localhost');
  const port = url.searchParams.get('port') ?? (url.port || '5432');
  return {
    connectionString,
    schema,
    location,
    server: host.startsWith('/') ? `socket ${host}` : `${host}:${port}`,
    database: decodeURIComponent(url.pathname.slice(1)) || decodeURIComponent(url.username) || 'postgres',
    user: decodeURIComponent(url.username) || process.env.PGUSER || process.env.USER || 'postgres',
    scrub(text) {
      let out = text.split(raw).join(location).split(connectionString).join(location);
      for (const s of secrets) out = out.split(s).join(MASK);
      return out;
    },
  };
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
