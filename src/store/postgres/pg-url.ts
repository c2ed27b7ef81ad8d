/**
 * A store location as text: whether it is a PostgreSQL URL, and its redaction. Loads nothing
 * (no driver, no URL parser), so any command may use it at start; pg-target.ts parses a URL.
 */

/** What stands in for a password in anything printed or stored. */
export const MASK = '***';

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

export function decodeLoosely(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
