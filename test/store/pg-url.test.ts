import { describe, expect, it } from 'vitest';
import { describeStore, resolveDbPath } from '../../src/store/open-store.js';
import { pgStoreError } from '../../src/store/postgres/pg-errors.js';
import { parsePgUrl } from '../../src/store/postgres/pg-target.js';
import { isPostgresUrl, redactUrl } from '../../src/store/postgres/pg-url.js';

/** The one redaction of a store's name (SPEC §9), on the forms a URL can hold a password in. */
describe('redactUrl', () => {
  const cases: [string, string][] = [
    ['postgres://u:pw@h:5432/db', 'postgres://u:***@h:5432/db'],
    ['postgres://u:pw@h/db?schema=s', 'postgres://u:***@h/db?schema=s'],
    ['postgres://u@h/db?password=pw&schema=s', 'postgres://u@h/db?password=***&schema=s'],
    ['postgres://u@h/db?schema=s&sslpassword=pw', 'postgres://u@h/db?schema=s&sslpassword=***'],
    ['postgres://u@h/db?pass%77ord=pw', 'postgres://u@h/db?pass%77ord=***'],
    ['postgres://:pw@h/db', 'postgres://:***@h/db'],
    ['postgres://u:p@ss@h/db', 'postgres://u:***@h/db'],
    ['postgres://u:pa%40ss@h/db', 'postgres://u:***@h/db'],
    ['postgres://u:p/w?d#x@h/db', 'postgres://u:***@h/db'],
    ['POSTGRES://u:pw@h/db', 'POSTGRES://u:***@h/db'],
    ['postgresql://u:pw@/db?host=/run/postgresql', 'postgresql://u:***@/db?host=/run/postgresql'],
    ['postgres://u:pw@[::1', 'postgres://u:***@[::1'],
    ['postgres://u@h:5432/db', 'postgres://u@h:5432/db'],
    ['postgres://h/db', 'postgres://h/db'],
    ['/var/lib/x:y@z/splitdance.db', '/var/lib/x:y@z/splitdance.db'],
  ];
  for (const [given, shown] of cases) {
    it(`shows ${given} as ${shown}`, () => {
      expect(redactUrl(given)).toBe(shown);
      expect(describeStore(given)).toBe(shown);
    });
  }

  it('is what parsePgUrl gives as the location', () => {
    expect(parsePgUrl('PostgreSQL://u:p@ss@h/db?password=x&schema=s').location).toBe('PostgreSQL://u:***@h/db?password=***&schema=s');
  });
});

describe('isPostgresUrl', () => {
  it('recognises the scheme in any letter case, and resolveDbPath keeps such a URL a URL', () => {
    for (const url of ['postgres://h/db', 'POSTGRES://h/db', 'PostgreSQL://h/db', 'postgresql://h/db']) {
      expect(isPostgresUrl(url), url).toBe(true);
      expect(resolveDbPath(url, '/work', {})).toBe(url);
      expect(resolveDbPath(undefined, '/work', { SPLITDANCE_DB: url })).toBe(url);
    }
    expect(isPostgresUrl('postgre://h/db')).toBe(false);
  });

  it('refuses another scheme instead of making a file named after it, without its password', () => {
    expect(() => resolveDbPath('mysql://u:s3cret@h/db', '/work', {})).toThrow(/mysql:\/\/u:\*\*\*@h\/db is not a store/);
  });
});

/** Where the server is, the database and the user, as the driver's own parser reads the URL. */
describe('parsePgUrl', () => {
  const cases: [string, { server: string; database: string; user: string; connectionString: string }][] = [
    ['postgres://u:pw@h:5433/db?schema=s', { server: 'h:5433', database: 'db', user: 'u', connectionString: 'postgres://u:pw@h:5433/db' }],
    ['postgresql://u:pw@/db?host=/run/postgresql', { server: 'socket /run/postgresql', database: 'db', user: 'u', connectionString: 'postgresql://u:pw@/db?host=/run/postgresql' }],
    ['postgres://u:pw@%2Frun%2Fpg/db', { server: 'socket /run/pg', database: 'db', user: 'u', connectionString: 'postgres://u:pw@%2Frun%2Fpg/db' }],
    ['postgres://u@[::1]:5433/db', { server: '[::1]:5433', database: 'db', user: 'u', connectionString: 'postgres://u@[::1]:5433/db' }],
    ['postgres://u:pw@h/db?port=6000', { server: 'h:6000', database: 'db', user: 'u', connectionString: 'postgres://u:pw@h/db?port=6000' }],
    ['postgres://u:pw@h', { server: 'h:5432', database: 'u', user: 'u', connectionString: 'postgres://u:pw@h' }],
    ['postgres://u@h/db?user=other', { server: 'h:5432', database: 'db', user: 'other', connectionString: 'postgres://u@h/db?user=other' }],
    // TLS parameters pass to the driver untouched; parsing here reads no certificate file.
    ['postgres://u:pw@h/db?sslmode=require&sslcert=/nonexistent/cert.pem', { server: 'h:5432', database: 'db', user: 'u', connectionString: 'postgres://u:pw@h/db?sslmode=require&sslcert=/nonexistent/cert.pem' }],
  ];
  for (const [given, want] of cases) {
    it(`reads ${given}`, () => {
      const t = parsePgUrl(given);
      expect({ server: t.server, database: t.database, user: t.user, connectionString: t.connectionString }).toEqual(want);
    });
  }

  it('refuses what does not parse, without its password', () => {
    for (const bad of ['postgres://u:s3cret@[::1', 'postgres://u:s3cret@host:notaport/db', 'postgres://u:s3cret@h st/db']) {
      expect(() => parsePgUrl(bad), bad).toThrow(/is not a valid PostgreSQL URL/);
      expect(() => parsePgUrl(bad), bad).not.toThrow(/s3cret/);
    }
  });
});

describe('pgStoreError', () => {
  it('scrubs the password from a driver message that echoes the connection string', () => {
    const raw = 'postgres://u:s3cr%40et@h:1/db?schema=s';
    const t = parsePgUrl(raw);
    for (const message of [`bad: ${t.connectionString}`, `bad: ${raw}`, 'bad: password s3cr@et', 'bad: s3cr%40et']) {
      const err = pgStoreError(Object.assign(new Error(message), { code: 'XX000' }), t);
      expect(err.message).not.toMatch(/s3cr/);
      expect(err.stack).not.toMatch(/s3cr/);
    }
    const refused = pgStoreError(Object.assign(new Error(`connect ECONNREFUSED ${raw}`), { code: 'ECONNREFUSED' }), t);
    expect(refused.message).toMatch(/cannot reach PostgreSQL at h:1/);
    expect(refused.message).not.toMatch(/s3cr/);
  });
});
