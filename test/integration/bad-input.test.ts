import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, handler, runCli, tempDir } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { missing } from '../helpers/services.js';
import { dbPathIn, query } from '../helpers/store.js';

const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

/** Every bad input: one line naming the thing and the fix, the documented code, no stack, the store untouched. */
function expectCleanError(r: { code: number | null; stderr: string }, code: number, pattern: RegExp) {
  expect(r.code).toBe(code);
  expect(r.stderr).toMatch(pattern);
  expect(r.stderr).not.toMatch(/\n\s+at /);
}

describe('bad input, nothing written', () => {
  it('a missing source, an empty directory, no handler, both handlers, a non-numeric -j', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'empty'));
    expectCleanError(await runCli(['run', 'nope', '--exec', 'true'], { cwd: dir }), 2, /source .*nope does not exist/);
    expectCleanError(await runCli(['run', 'empty', '--exec', 'true'], { cwd: dir }), 2, /holds no files/);
    writeFileSync(join(dir, 'a.txt'), 'x\n');
    expectCleanError(await runCli(['run', 'a.txt'], { cwd: dir }), 2, /no handler: give --exec/);
    expectCleanError(await runCli(['run', 'a.txt', '--exec', 'true', '--handler', 'x.mjs'], { cwd: dir }), 2, /either --exec or --handler/);
    expectCleanError(await runCli(['run', 'a.txt', '--exec', 'true', '-j', 'lots'], { cwd: dir }), 2, /-j\/--concurrency expects a number/);
    expectCleanError(await runCli(['run', 'a.txt', '--exec', 'true', '--timeout', '5'], { cwd: dir }), 2, /--timeout expects a duration/);
    expectCleanError(await runCli(['run', 'a.txt', '--exec', 'true', '--bogus'], { cwd: dir }), 2, /unknown option '--bogus'/);
    expect(existsSync(join(dir, '.splitdance'))).toBe(false);
  });

  it('a handler module that does not load, or has no default export: exit 2, store untouched', async () => {
    const p = projectWithFiles(3);
    expectCleanError(await runCli(['run', 'src', '--handler', handler('broken')], { cwd: p.dir }), 2, /broken\.mjs failed to load: .*broken on purpose/);
    expectCleanError(await runCli(['run', 'src', '--handler', handler('no-default')], { cwd: p.dir }), 2, /no default export/);
    expectCleanError(await runCli(['run', 'src', '--handler', 'missing.mjs'], { cwd: p.dir }), 2, /missing\.mjs does not exist/);
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);

    // With an existing store: the broken handler changes nothing in it.
    expect((await runCli(['run', 'src', '--exec', 'true', '--batch', 'other'], { cwd: p.dir })).code).toBe(0);
    const before = query(dbPathIn(p.dir), 'SELECT * FROM tasks ORDER BY id');
    expectCleanError(await runCli(['run', 'src', '--handler', handler('broken')], { cwd: p.dir }), 2, /failed to load/);
    expect(query(dbPathIn(p.dir), 'SELECT * FROM tasks ORDER BY id')).toEqual(before);
    expect(query(dbPathIn(p.dir), 'SELECT name FROM batches')).toEqual([{ name: 'other' }]);
  });

  it('run SRC --batch X where X was split from another source: exit 2 naming both, nothing merged', async () => {
    const p = projectWithFiles(3);
    expect((await runCli(['run', 'src', '--batch', 'X', '--exec', 'true'], { cwd: p.dir })).code).toBe(0);
    const other = join(p.dir, 'other');
    mkdirSync(other);
    writeFileSync(join(other, 'f001.log'), 'another file with a key of X\n');
    writeFileSync(join(other, 'new.log'), 'new\n');
    const before = sha(dbPathIn(p.dir));
    for (const extra of [[], ['--dry-run']]) {
      const r = await runCli(['run', 'other', '--batch', 'X', ...extra], { cwd: p.dir });
      expectCleanError(r, 2, new RegExp(`batch X was split from ${p.src}, not ${other}: .*--batch NEW`));
    }
    expect(sha(dbPathIn(p.dir))).toBe(before);
    expect(query(dbPathIn(p.dir), 'SELECT task_key FROM tasks ORDER BY task_key')).toEqual(p.keys.map((task_key) => ({ task_key })));
    // Its own source, however it is written, still resumes it.
    expect((await runCli(['run', './src/', '--batch', 'X'], { cwd: p.dir })).code).toBe(0);
  });

  it('an invalid SPLITDANCE_BUSY_TIMEOUT_MS is exit 2 naming it, for run and status; nothing written', async () => {
    const p = projectWithFiles(2);
    for (const value of ['abc', '-1', '1.5', '99999999999']) {
      for (const args of [['run', 'src', '--exec', 'true'], ['status']]) {
        const r = await runCli(args, { cwd: p.dir, env: { SPLITDANCE_BUSY_TIMEOUT_MS: value } });
        expectCleanError(r, 2, new RegExp(`SPLITDANCE_BUSY_TIMEOUT_MS expects a whole number of milliseconds .*got "${value.replace('.', '\\.')}"`));
      }
    }
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
  });

  it('--lease, --progress-interval and --timeout shorter than the design honours: exit 2 naming the minimum, flag or job file', async () => {
    const p = projectWithFiles(2);
    for (const [flag, value, min] of [
      ['--lease', '30ms', '1s'],
      ['--progress-interval', '10ms', '100ms'],
      ['--timeout', '5ms', '100ms'],
    ] as const) {
      expectCleanError(await runCli(['run', 'src', '--exec', 'true', flag, value], { cwd: p.dir }), 2, new RegExp(`${flag} must be at least ${min} \\(shorter cannot be honoured\\); got ${value}`));
      const field = flag.slice(2).replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
      writeFileSync(join(p.dir, 'job.json'), JSON.stringify({ exec: 'true', [field]: value }));
      expectCleanError(await runCli(['run', 'src', '--job', 'job.json'], { cwd: p.dir }), 2, new RegExp(`field "${field}": .*at least ${min}`));
    }
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
    expect((await runCli(['run', 'src', '--exec', 'true', '--lease', '1s', '--timeout', '100ms', '--progress-interval', '100ms'], { cwd: p.dir })).code).toBe(0);
  });

  it('a job-file batch name with a NUL or a lone surrogate: exit 2 naming it, no store', async () => {
    const p = projectWithFiles(2);
    for (const [escaped, why] of [
      ['a\\u0000b', /holds a NUL character/],
      ['a\\ud800b', /holds a lone UTF-16 surrogate/],
      ['x\\udfff', /holds a lone UTF-16 surrogate/],
    ] as const) {
      writeFileSync(join(p.dir, 'job.json'), `{"exec": "true", "batch": "${escaped}"}`);
      expectCleanError(await runCli(['run', 'src', '--job', 'job.json'], { cwd: p.dir }), 2, why);
      expect(existsSync(join(p.dir, '.splitdance')), escaped).toBe(false);
    }
    writeFileSync(join(p.dir, 'job.json'), '{"exec": "true", "batch": "ok \\ud83d\\ude00"}'); // a pair is fine
    expect((await runCli(['run', 'src', '--job', 'job.json'], { cwd: p.dir })).code).toBe(0);
  });

  it.skipIf(missing('root', 'the test that makes a private /dev/null'))('reading commands never write: an empty --db file stays empty; a FIFO or a device as --db is exit 4 at once, no journal beside it', async () => {
    const dir = tempDir();
    const empty = join(dir, 'empty.db');
    writeFileSync(empty, '');
    for (const args of [['status'], ['tasks'], ['batches'], ['status', '--json']]) {
      const r = await runCli([...args, '--db', empty], { cwd: dir });
      expectCleanError(r, 4, /no store at .*empty\.db: the file is empty/);
      expect(readFileSync(empty).length, args.join(' ')).toBe(0);
    }
    execFileSync('mkfifo', [join(dir, 'fifo.db')]);
    execFileSync('mknod', [join(dir, 'null.db'), 'c', '1', '3']); // a private /dev/null
    for (const [name, kind] of [['fifo.db', 'a FIFO'], ['null.db', 'a device']]) {
      for (const args of [['status'], ['run', dir, '--exec', 'true'], ['run', dir, '--exec', 'true', '--dry-run']]) {
        const r = await runCli([...args, '--db', join(dir, name)], { cwd: dir, timeoutMs: 20_000 });
        expectCleanError(r, 4, new RegExp(`store path .*${name} is ${kind}, not a store file`));
      }
    }
    expect(readdirSync(dir).sort()).toEqual(['empty.db', 'fifo.db', 'null.db']);
  });

  it.skipIf(missing('strace', 'the split test that fakes a vanished file'))('a file removed while the source is split (listed, then its stat fails): skipped with a note, the rest runs, no unexpected error', async () => {
    const p = projectWithFiles(4);
    const gone = join(p.src, 'f002.log');
    // strace makes every stat of that one file fail with ENOENT: the file vanished after the listing.
    const stats = 'statx,newfstatat,stat,lstat';
    const r = spawnSync('strace', ['-f', '-qq', '-o', '/dev/null', '-P', gone, '-e', `trace=${stats}`, '-e', `inject=${stats}:error=ENOENT`, process.execPath, BIN, 'run', 'src', '--exec', 'true'], {
      cwd: p.dir,
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1' },
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`skipped 1 .*\\(removed during the split\\): ${gone}`));
    expect(r.stderr).not.toMatch(/unexpected error/);
    expect(query(dbPathIn(p.dir), 'SELECT task_key FROM tasks ORDER BY task_key')).toEqual(['f000.log', 'f001.log', 'f003.log'].map((task_key) => ({ task_key })));
  });

  it('an unknown --batch and a missing store for status', async () => {
    const p = projectWithFiles(1);
    expectCleanError(await runCli(['status'], { cwd: p.dir }), 4, /no store at .*splitdance\.db/);
    expect((await runCli(['run', 'src', '--exec', 'true'], { cwd: p.dir })).code).toBe(0);
    expectCleanError(await runCli(['status', '--batch', 'nightly'], { cwd: p.dir }), 2, /no batch named "nightly"/);
    expectCleanError(await runCli(['show', 'nope.log'], { cwd: p.dir }), 2, /no task "nope\.log"/);
    expectCleanError(await runCli(['tasks', '--status', 'DONE'], { cwd: p.dir }), 2, /--status expects one of/);
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
      if (existsSync(db)) (await import('node:fs')).rmSync(db);
      make();
      const before = sha(db);
      const r = await runCli(['run', 'src', '--exec', 'true', '--db', db], { cwd: p.dir });
      expectCleanError(r, 4, message);
      expect(sha(db), name).toBe(before);
      const s = await runCli(['status', '--db', db], { cwd: p.dir });
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
      const r = await runCli(['run', 'src', '--exec', 'true', '--db', url(params)], { cwd: p.dir });
      expectCleanError(r, code, message);
      expect(r.stderr).not.toMatch(/unexpected error|--dry-run/);
    }
  });
});
