import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliResult } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { PG_URL, pgQuery } from '../helpers/pg.js';

/**
 * SPEC §9: a PostgreSQL password never appears in anything splitdance prints or writes, and
 * a `postgres://` URL is recognised in any letter case. Every command that names the store is
 * run through the built CLI, on the real server, with the password in each place a URL can
 * hold it. A role of its own gets a password no other text contains, so its mere absence
 * from the output proves it was not printed.
 */
const ADMIN_URL = PG_URL;

const tag = randomBytes(5).toString('hex');
const ROLE = `sd_secret_${tag}`;
/** The distinctive part of every password below: if it shows up anywhere, a password leaked. */
const SECRET = `Zq${tag}Xw`;
/** Holds an `@`, so it can also be given unencoded (the parser takes the last `@`). */
const PASSWORD = `${SECRET}@pw`;
const ENCODED = encodeURIComponent(PASSWORD);
const schemas: string[] = [];

/** As the test server's superuser. */
const admin = pgQuery;

const server = () => new URL(ADMIN_URL!);
const database = () => server().pathname.slice(1);
const hostPort = () => `${server().hostname}:${server().port || '5432'}`;

function freshSchema(): string {
  const schema = `secret_${tag}_${schemas.length}`;
  schemas.push(schema);
  return schema;
}

beforeAll(async () => {
  if (!ADMIN_URL) return;
  await admin(`CREATE ROLE ${ROLE} LOGIN PASSWORD '${PASSWORD}'`);
  await admin(`GRANT CREATE ON DATABASE "${database()}" TO ${ROLE}`);
});

afterAll(async () => {
  if (!ADMIN_URL) return;
  for (const s of schemas) await admin(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await admin(`DROP OWNED BY ${ROLE}`).catch(() => undefined);
  await admin(`DROP ROLE IF EXISTS ${ROLE}`);
});

/** Every path under `dir` (files and folders), relative to it. */
function pathsUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((p) => relative(dir, join(dir, p)));
}

/** No output holds the password, and nothing in the working directory is named after the URL. */
function expectNothingLeaked(results: CliResult[], cwd: string, secret = SECRET): void {
  for (const r of results) {
    expect(r.stdout, r.stdout).not.toContain(secret);
    expect(r.stderr, r.stderr).not.toContain(secret);
  }
  expect(pathsUnder(cwd).filter((p) => /postgres|@|:/i.test(p))).toEqual([]);
}

/** Every row of every table of the store, as text. */
async function storeText(schema: string): Promise<string> {
  const tables = await admin<{ name: string }>('SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1', [schema]);
  expect(tables.length).toBeGreaterThan(0);
  const out: string[] = [];
  for (const { name } of tables) out.push(...(await admin<{ r: string }>(`SELECT t::text AS r FROM ${schema}."${name}" t`)).map((x) => x.r));
  return out.join('\n');
}

/**
 * Every command that names or opens the store, on a store at `db` (or, with `env`, at
 * `SPLITDANCE_DB`): dry runs, a run cut short, a worker that finishes it, a run with
 * --json, status and batches. Returns every result, in that order.
 */
async function everyCommand(cwd: string, db: string | null, env: NodeJS.ProcessEnv = {}): Promise<Record<string, CliResult>> {
  const dbArgs = db === null ? [] : ['--db', db];
  const run = (...args: string[]) => runCli([...args, ...dbArgs], { cwd, env });
  const exec = ['--exec', 'true {}'];
  return {
    dryRun: await run('run', 'src', '--dry-run', ...exec),
    dryRunJson: await run('run', 'src', '--dry-run', '--json', ...exec),
    runCut: await run('run', 'src', ...exec, '--max-runtime', '1ms', '-j', '1'),
    worker: await run('worker', '-j', '1'),
    runJson: await run('run', 'src', '--json', ...exec),
    status: await run('status'),
    statusJson: await run('status', '--json'),
    batches: await run('batches'),
    batchesJson: await run('batches', '--json'),
  };
}

describe.skipIf(!ADMIN_URL)('a PostgreSQL password is never printed or stored', () => {
  const base = (scheme: string, userPart: string, query = '') => `${scheme}://${userPart}@${hostPort()}/${database()}${query}`;

  // Built when a test runs, not when the file is collected: without a server there is no URL.
  const working: [string, (schema: string) => string, () => RegExp, NodeJS.ProcessEnv?][] = [
    ['in the user part', (s) => base('postgres', `${ROLE}:${ENCODED}`, `?schema=${s}`), () => new RegExp(`postgres://${ROLE}:\\*\\*\\*@`)],
    ['as ?password=', (s) => base('postgres', ROLE, `?password=${ENCODED}&schema=${s}`), () => /\?password=\*\*\*&schema=/],
    ['with an unencoded @ in it', (s) => base('postgres', `${ROLE}:${PASSWORD}`, `?schema=${s}`), () => new RegExp(`postgres://${ROLE}:\\*\\*\\*@${hostPort()}`)],
    ['behind an upper-case POSTGRES:// scheme', (s) => base('POSTGRES', `${ROLE}:${ENCODED}`, `?schema=${s}`), () => new RegExp(`POSTGRES://${ROLE}:\\*\\*\\*@`)],
    ['behind a mixed-case PostgreSQL:// scheme', (s) => base('PostgreSQL', `${ROLE}:${ENCODED}`, `?schema=${s}`), () => new RegExp(`PostgreSQL://${ROLE}:\\*\\*\\*@`)],
    // No user in the URL: the driver takes PGUSER.
    ['after an empty user', (s) => base('postgres', `:${ENCODED}`, `?schema=${s}`), () => /postgres:\/\/:\*\*\*@/, { PGUSER: ROLE }],
  ];

  for (const [where, urlOf, shownBy, env] of working) {
    it(`every command on a real store, password ${where}: the store is named without it, nothing holds it`, async () => {
      const shown = shownBy();
      const schema = freshSchema();
      const db = urlOf(schema);
      const p = projectWithFiles(3);
      const r = await everyCommand(p.dir, db, env);
      expect(r.dryRun!.code, r.dryRun!.stderr).toBe(0);
      expect(r.dryRun!.stdout).toMatch(shown);
      expect(JSON.parse(r.dryRunJson!.stdout).store).toMatch(shown);
      expect(r.runCut!.code, r.runCut!.stderr).toBe(3);
      expect(r.runCut!.stderr).toMatch(shown); // the start line names the store
      expect(r.worker!.code, r.worker!.stderr).toBe(0);
      expect(r.worker!.stderr).toMatch(shown);
      expect(r.runJson!.code, r.runJson!.stderr).toBe(0);
      const start = r.runJson!.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.event === 'start');
      expect(start.store).toMatch(shown);
      expect(JSON.parse(r.statusJson!.stdout)).toMatchObject({ total: 3, succeeded: 3 });
      expect(JSON.parse(r.batchesJson!.stdout)).toHaveLength(1);
      for (const [name, res] of Object.entries(r)) expect(res.code, `${name}: ${res.stderr}`).not.toBeNull();
      expectNothingLeaked(Object.values(r), p.dir);
      expect(await storeText(schema)).not.toContain(SECRET);
    });
  }

  it('every command with the URL in SPLITDANCE_DB: the store is named without the password', async () => {
    const schema = freshSchema();
    const p = projectWithFiles(2);
    const r = await everyCommand(p.dir, null, { SPLITDANCE_DB: base('postgresql', `${ROLE}:${ENCODED}`, `?schema=${schema}`) });
    expect(r.dryRun!.stdout).toMatch(new RegExp(`in store postgresql://${ROLE}:\\*\\*\\*@`));
    expect(r.runJson!.code, r.runJson!.stderr).toBe(0);
    expect(r.runCut!.stderr).toMatch(/store postgresql:\/\/.*:\*\*\*@/);
    expectNothingLeaked(Object.values(r), p.dir);
    expect(await storeText(schema)).not.toContain(SECRET);
  });

  it('every command with the test server URL (password in the user part, then as ?password=): no ":PASSWORD@" and no "password=PASSWORD"', async () => {
    const given = server();
    const password = decodeURIComponent(given.password);
    for (const variant of ['user', 'query'] as const) {
      const url = server();
      url.searchParams.set('schema', freshSchema());
      if (variant === 'query') {
        url.password = '';
        url.searchParams.set('password', password);
      }
      const p = projectWithFiles(2);
      const r = await everyCommand(p.dir, url.toString());
      expect(r.runJson!.code, r.runJson!.stderr).toBe(0);
      for (const res of Object.values(r)) {
        for (const out of [res.stdout, res.stderr]) {
          expect(out).not.toContain(`:${given.password}@`);
          expect(out).not.toContain(`password=${given.password}`);
          expect(out).not.toContain(`password=${encodeURIComponent(password)}`);
        }
      }
      expectNothingLeaked(Object.values(r), p.dir, `:${given.password}@`);
    }
  });

  const failing: [string, () => string, RegExp][] = [
    ['an empty user, at a closed port', () => `postgres://:${ENCODED}@127.0.0.1:1/db`, /cannot reach PostgreSQL at 127\.0\.0\.1:1/],
    ['an unencoded @, at a closed port', () => `postgres://someone:${PASSWORD}@127.0.0.1:1/db`, /cannot reach PostgreSQL at 127\.0\.0\.1:1/],
    ['an upper-case scheme, at a closed port', () => `POSTGRES://someone:${ENCODED}@127.0.0.1:1/db`, /cannot reach PostgreSQL at 127\.0\.0\.1:1/],
    ['an unencoded /, so the URL does not parse', () => `postgres://someone:${SECRET}/x@127.0.0.1:1/db`, /not a valid PostgreSQL URL/],
    ['unencoded ? and #', () => `postgres://someone:${SECRET}?x#y@127.0.0.1:1/db`, /not a valid PostgreSQL URL/],
    ['a URL that does not parse at all', () => `postgres://someone:${ENCODED}@[::1`, /not a valid PostgreSQL URL/],
    ['a socket ?host= and no host', () => `postgresql://someone:${ENCODED}@/db?host=/nonexistent-${tag}`, /cannot reach PostgreSQL at socket \/nonexistent/],
    ['as ?password=, at a closed port', () => `postgres://someone@127.0.0.1:1/db?password=${ENCODED}`, /cannot reach PostgreSQL at 127\.0\.0\.1:1/],
    ['a wrong password on the real server', () => `postgres://${ROLE}:${SECRET}wrong@${hostPort()}/${database()}`, /refused the login of user/],
    ['an empty user on the real server', () => `postgres://:${ENCODED}@${hostPort()}/${database()}`, /refused the login of user|database ".*" does not exist/],
    ['a URL of another scheme', () => `mysql://someone:${ENCODED}@127.0.0.1:1/db`, /not a store splitdance knows/],
  ];

  // `worker` waits out an unreachable store as an outage, up to SPLITDANCE_RECONNECT_MS (60 s by
  // default): shortened here, and the test's time allowed from it and the nine commands.
  const RECONNECT_MS = 3000;
  for (const [what, dbOf, error] of failing) {
    it(`every command fails without printing the password: ${what}`, { timeout: RECONNECT_MS + 9 * 15_000 }, async () => {
      const p = projectWithFiles(1);
      const r = await everyCommand(p.dir, dbOf(), { PGCONNECT_TIMEOUT: '2', SPLITDANCE_RECONNECT_MS: String(RECONNECT_MS) });
      for (const [name, res] of Object.entries(r)) {
        expect(res.code, `${name}: ${res.stdout}${res.stderr}`).not.toBe(0);
        expect(res.stderr, name).toMatch(error);
      }
      expectNothingLeaked(Object.values(r), p.dir);
    });
  }
});
