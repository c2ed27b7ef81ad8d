import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { missing } from '../helpers/services.js';
import { dbPathIn } from '../helpers/store.js';

const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

/** Every bad input: one line naming the thing and the fix, the documented code, no stack, the store untouched. */
function expectCleanError(r: { code: number | null; stderr: string }, code: number, pattern: RegExp) {
  expect(r.code).toBe(code);
  expect(r.stderr).toMatch(pattern);
  expect(r.stderr).not.toMatch(/\n\s+at /);
}

/** A command's --json output, parsed (it must succeed). */
async function jsonOf(cwd: string, argv: string[]) {
  const r = await mainIn(cwd, argv);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('bad input, nothing written', () => {
  it('a missing source, an empty directory, no handler, both handlers, a non-numeric -j', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'empty'));
    expectCleanError(await mainIn(dir, ['run', 'nope', '--exec', 'true']), 2, /source .*nope does not exist/);
    expectCleanError(await mainIn(dir, ['run', 'empty', '--exec', 'true']), 2, /holds no files/);
    writeFileSync(join(dir, 'a.txt'), 'x\n');
    expectCleanError(await mainIn(dir, ['run', 'a.txt']), 2, /no handler: give --exec/);
    expectCleanError(await mainIn(dir, ['run', 'a.txt', '--exec', 'true', '--handler', 'x.mjs']), 2, /either --exec or --handler/);
    expectCleanError(await mainIn(dir, ['run', 'a.txt', '--exec', 'true', '-j', 'lots']), 2, /-j\/--concurrency expects a number/);
    expectCleanError(await mainIn(dir, ['run', 'a.txt', '--exec', 'true', '--timeout', '5']), 2, /--timeout expects a duration/);
    expectCleanError(await mainIn(dir, ['run', 'a.txt', '--exec', 'true', '--bogus']), 2, /unknown option '--bogus'/);
    expect(existsSync(join(dir, '.splitdance'))).toBe(false);
  });

  it('a handler module that does not load, or has no default export: exit 2, store untouched', async () => {
    const p = projectWithFiles(3);
    expectCleanError(await mainIn(p.dir, ['run', 'src', '--handler', handler('broken')]), 2, /broken\.mjs failed to load: .*broken on purpose/);
    expectCleanError(await mainIn(p.dir, ['run', 'src', '--handler', handler('no-default')]), 2, /no default export/);
    expectCleanError(await mainIn(p.dir, ['run', 'src', '--handler', 'missing.mjs']), 2, /missing\.mjs does not exist/);
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);

    // With an existing store: the broken handler changes nothing in it.
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--batch', 'other'])).code).toBe(0);
    const before = await jsonOf(p.dir, ['tasks', '--json', '--batch', 'other']);
    expectCleanError(await mainIn(p.dir, ['run', 'src', '--handler', handler('broken')]), 2, /failed to load/);
    expect(await jsonOf(p.dir, ['tasks', '--json', '--batch', 'other'])).toEqual(before);
    expect((await jsonOf(p.dir, ['batches', '--json'])).map((b: { batch: string }) => b.batch)).toEqual(['other']);
  });

  it('run SRC --batch X where X was split from another source: exit 2 naming both, nothing merged', async () => {
    const p = projectWithFiles(3);
    expect((await mainIn(p.dir, ['run', 'src', '--batch', 'X', '--exec', 'true'])).code).toBe(0);
    const other = join(p.dir, 'other');
    mkdirSync(other);
    writeFileSync(join(other, 'f001.log'), 'another file with a key of X\n');
    writeFileSync(join(other, 'new.log'), 'new\n');
    const before = sha(dbPathIn(p.dir));
    for (const extra of [[], ['--dry-run']]) {
      const r = await mainIn(p.dir, ['run', 'other', '--batch', 'X', ...extra]);
      expectCleanError(r, 2, new RegExp(`batch X was split from ${p.src}, not ${other}: .*--batch NEW`));
    }
    expect(sha(dbPathIn(p.dir))).toBe(before);
    expect((await jsonOf(p.dir, ['tasks', '--json', '--batch', 'X'])).map((t: { key: string }) => t.key)).toEqual(p.keys);
    // Its own source, however it is written, still resumes it.
    expect((await mainIn(p.dir, ['run', './src/', '--batch', 'X'])).code).toBe(0);
  });

  it('--lease, --progress-interval and --timeout shorter than the design honours: exit 2 naming the minimum, flag or job file', async () => {
    const p = projectWithFiles(2);
    for (const [flag, value, min] of [
      ['--lease', '30ms', '1s'],
      ['--progress-interval', '10ms', '100ms'],
      ['--timeout', '5ms', '100ms'],
    ] as const) {
      expectCleanError(await mainIn(p.dir, ['run', 'src', '--exec', 'true', flag, value]), 2, new RegExp(`${flag} must be at least ${min} \\(shorter cannot be honoured\\); got ${value}`));
      const field = flag.slice(2).replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
      writeFileSync(join(p.dir, 'job.json'), JSON.stringify({ exec: 'true', [field]: value }));
      expectCleanError(await mainIn(p.dir, ['run', 'src', '--job', 'job.json']), 2, new RegExp(`field "${field}": .*at least ${min}`));
    }
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--lease', '1s', '--timeout', '100ms', '--progress-interval', '100ms'])).code).toBe(0);
  });

  it('a job-file batch name with a NUL or a lone surrogate: exit 2 naming it, no store', async () => {
    const p = projectWithFiles(2);
    for (const [escaped, why] of [
      ['a\\u0000b', /holds a NUL character/],
      ['a\\ud800b', /holds a lone UTF-16 surrogate/],
      ['x\\udfff', /holds a lone UTF-16 surrogate/],
    ] as const) {
      writeFileSync(join(p.dir, 'job.json'), `{"exec": "true", "batch": "${escaped}"}`);
      expectCleanError(await mainIn(p.dir, ['run', 'src', '--job', 'job.json']), 2, why);
      expect(existsSync(join(p.dir, '.splitdance')), escaped).toBe(false);
    }
    writeFileSync(join(p.dir, 'job.json'), '{"exec": "true", "batch": "ok \\ud83d\\ude00"}'); // a pair is fine
    expect((await mainIn(p.dir, ['run', 'src', '--job', 'job.json'])).code).toBe(0);
  });

  it('an unknown --batch and a missing store for status', async () => {
    const p = projectWithFiles(1);
    expectCleanError(await mainIn(p.dir, ['status']), 4, /no store at .*splitdance\.db/);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true'])).code).toBe(0);
    expectCleanError(await mainIn(p.dir, ['status', '--batch', 'nightly']), 2, /no batch named "nightly"/);
    expectCleanError(await mainIn(p.dir, ['show', 'nope.log']), 2, /no task "nope\.log"/);
    expectCleanError(await mainIn(p.dir, ['tasks', '--status', 'DONE']), 2, /--status expects one of/);
  });

  it('corrupt, foreign, newer and non-SQLite stores are refused with exit 4 and never modified', async () => {
    const p = projectWithFiles(1);
    const db = join(p.dir, 'store.db');
    const cases: [string, () => void, RegExp][] = [
      ['garbage', () => writeFileSync(db, 'this is not a database, just text\n'.repeat(100)), /not an SQLite database/],
      [
        'foreign',
        () => {
          const d = new Database(db);
          d.exec('CREATE TABLE customers (id INTEGER PRIMARY KEY)');
          d.close();
        },
        /not a splitdance store/,
      ],
      [
        'newer',
        () => {
          const d = new Database(db);
          d.pragma('user_version = 99');
          d.close();
        },
        /schema version 99, newer/,
      ],
      [
        'truncated',
        () => {
          const d = new Database(db);
          d.exec('CREATE TABLE t (x TEXT); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) INSERT INTO t SELECT hex(randomblob(500)) FROM n');
          d.pragma('user_version = 1');
          d.close();
          writeFileSync(db, readFileSync(db).subarray(0, 6000));
        },
        /corrupt|not an SQLite/,
      ],
    ];
    for (const [name, make, message] of cases) {
      for (const suffix of ['', '-wal', '-shm']) if (existsSync(db + suffix)) writeFileSync(db + suffix, ''); // reset
      if (existsSync(db)) rmSync(db);
      make();
      const before = sha(db);
      const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--db', db]);
      expectCleanError(r, 4, message);
      expect(sha(db), name).toBe(before);
      const s = await mainIn(p.dir, ['status', '--db', db]);
      expect(s.code, name).toBe(4);
      expect(sha(db), name).toBe(before);
    }
  });
});

describe.skipIf(missing('postgres'))('PostgreSQL settings that cannot work: one line and the documented code, never an unexpected error', () => {
  const schema = pgSchemas('sd_badpg');
  it('a reserved schema, an unknown setting, a statement timeout, a read-only server', async () => {
    const p = projectWithFiles(1);
    const url = (params: string) => `${PG_URL}${PG_URL!.includes('?') ? '&' : '?'}${params}`;
    const cases: [string, number, RegExp][] = [
      ['schema=pg_sd26', 2, /schema "pg_sd26" is a name PostgreSQL at .* reserves .*choose another one with \?schema=NAME/],
      [`schema=${schema().schema}&options=-c%20nosuchsetting%3D1`, 2, /does not know a setting or object that --db names \(unrecognized configuration parameter "nosuchsetting"\)/],
      [`schema=${schema().schema}&options=-c%20statement_timeout%3D1`, 4, /cancelled a statement on the store .*statement_timeout/],
      [`schema=${schema().schema}&options=-c%20default_transaction_read_only%3Don`, 4, /accepts no writes to the store .*point --db at the primary/],
    ];
    for (const [params, code, message] of cases) {
      const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--db', url(params)]);
      expectCleanError(r, code, message);
      expect(r.stderr).not.toMatch(/unexpected error|--dry-run/);
    }
  });
});
