import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { PG_URL } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query } from '../helpers/store.js';

const STACK_LINE = /^\s+at .+(:\d+:\d+\)?|\(native\))$/m;

describe('SPLITDANCE_DB', () => {
  it('selects the store for run, status, tasks, show, logs and batches; --db wins over it', async () => {
    const p = projectWithFiles(3);
    // Relative, like a user's `export SPLITDANCE_DB=stores/env.db`: resolved against the working directory.
    const env = { SPLITDANCE_DB: 'stores/env.db' };
    const envDb = join(p.dir, 'stores', 'env.db');
    const flagDb = join(p.dir, 'flag.db');

    expect((await runCli(['run', 'src', '--batch', 'env-batch', '--exec', 'echo env-{key}'], { cwd: p.dir, env })).code).toBe(0);
    expect(existsSync(envDb)).toBe(true);
    expect((await runCli(['run', 'src', '--db', flagDb, '--batch', 'flag-batch', '--exec', 'echo flag-{key}'], { cwd: p.dir, env })).code).toBe(0);
    expect(existsSync(dbPathIn(p.dir))).toBe(false); // the default store was never created
    expect(query<{ name: string }>(envDb, 'SELECT name FROM batches').map((b) => b.name)).toEqual(['env-batch']);
    expect(query<{ name: string }>(flagDb, 'SELECT name FROM batches').map((b) => b.name)).toEqual(['flag-batch']);

    for (const [extra, batch, word] of [
      [[], 'env-batch', 'env'],
      [['--db', flagDb], 'flag-batch', 'flag'],
    ] as const) {
      const opts = { cwd: p.dir, env };
      const what = `${word} store`;
      const status = await runCli(['status', '--json', ...extra], opts);
      expect(status.code, what).toBe(0);
      expect(JSON.parse(status.stdout), what).toMatchObject({ batch, total: 3, succeeded: 3 });
      const tasks = await runCli(['tasks', '--json', ...extra], opts);
      expect(tasks.code, what).toBe(0);
      expect(JSON.parse(tasks.stdout).map((t: { key: string }) => t.key), what).toEqual(['f000.log', 'f001.log', 'f002.log']);
      const show = await runCli(['show', 'f001.log', '--json', ...extra], opts);
      expect(show.code, what).toBe(0);
      expect(JSON.parse(show.stdout).attempts[0].outputTail, what).toContain(`${word}-f001.log`);
      const logs = await runCli(['logs', 'f002.log', ...extra], opts);
      expect(logs.code, what).toBe(0);
      expect(logs.stdout.trim(), what).toBe(`${word}-f002.log`);
      const batches = await runCli(['batches', '--json', ...extra], opts);
      expect(batches.code, what).toBe(0);
      expect(JSON.parse(batches.stdout).map((b: { batch: string }) => b.batch), what).toEqual([batch]);
    }
    expect(existsSync(dbPathIn(p.dir))).toBe(false);
  });

  it('--db wins even when SPLITDANCE_DB names a file that is not a store', async () => {
    const p = projectWithFiles(2);
    writeFileSync(join(p.dir, 'junk.db'), 'not a database at all\n');
    const env = { SPLITDANCE_DB: join(p.dir, 'junk.db') };
    expect((await runCli(['run', 'src', '--db', 'good.db', '--exec', 'true'], { cwd: p.dir, env })).code).toBe(0);
    expect((await runCli(['status', '--db', 'good.db'], { cwd: p.dir, env })).code).toBe(0);
    const viaEnv = await runCli(['status'], { cwd: p.dir, env });
    expect(viaEnv.code).toBe(4);
    expect(viaEnv.stderr).toContain('junk.db');
  });
});

const pgSchemas: string[] = [];
afterAll(async () => {
  if (!PG_URL || pgSchemas.length === 0) return;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    for (const s of pgSchemas) await client.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  } finally {
    await client.end();
  }
});

describe.skipIf(!PG_URL)('SPLITDANCE_DB with a PostgreSQL URL', () => {
  it('puts run, status, tasks, show, logs and batches on the shared store', async () => {
    const schema = `envdb_${process.pid}_${Date.now() % 100000}`;
    pgSchemas.push(schema);
    const env = { SPLITDANCE_DB: `${PG_URL}${PG_URL!.includes('?') ? '&' : '?'}schema=${schema}` };
    const p = projectWithFiles(2);
    const opts = { cwd: p.dir, env };
    expect((await runCli(['run', 'src', '--batch', 'pg-batch', '--exec', 'echo pg-{key}'], opts)).code).toBe(0);
    expect(existsSync(dbPathIn(p.dir))).toBe(false); // no SQLite store was made
    expect(JSON.parse((await runCli(['status', '--json'], opts)).stdout)).toMatchObject({ batch: 'pg-batch', total: 2, succeeded: 2 });
    expect(JSON.parse((await runCli(['tasks', '--json'], opts)).stdout)).toHaveLength(2);
    expect(JSON.parse((await runCli(['show', 'f000.log', '--json'], opts)).stdout).attempts[0].outputTail).toContain('pg-f000.log');
    expect((await runCli(['logs', 'f001.log'], opts)).stdout.trim()).toBe('pg-f001.log');
    expect(JSON.parse((await runCli(['batches', '--json'], opts)).stdout).map((b: { batch: string }) => b.batch)).toEqual(['pg-batch']);
    // --db still wins: a SQLite file given on the command line is used instead.
    const local = await runCli(['run', 'src', '--db', 'local.db', '--batch', 'local', '--exec', 'true'], opts);
    expect(local.code).toBe(0);
    expect(query<{ name: string }>(join(p.dir, 'local.db'), 'SELECT name FROM batches')).toEqual([{ name: 'local' }]);
    expect(JSON.parse((await runCli(['batches', '--json'], opts)).stdout).map((b: { batch: string }) => b.batch)).toEqual(['pg-batch']);
  });
});

describe('--verbose', () => {
  it('an unexpected error prints a stack trace with --verbose and only a hint without it', async () => {
    const p = projectWithFiles(2);
    expect((await runCli(['run', 'src', '--exec', 'true'], { cwd: p.dir })).code).toBe(0);
    // A bug, injected by the test-only failpoint: an error that is neither a usage nor a store error.
    const env = { SPLITDANCE_FAILPOINT: 'bug:1' };
    const plain = await runCli(['status'], { cwd: p.dir, env });
    // 70, not 1: a script reads 1 as "tasks failed" (SPEC §6).
    expect(plain.code).toBe(70);
    expect(plain.stderr).toContain('unexpected error');
    expect(plain.stderr).toContain('a bug in splitdance');
    expect(plain.stderr).toContain('internal error injected');
    expect(plain.stderr).toContain('--verbose');
    expect(plain.stderr).not.toMatch(STACK_LINE);

    const verbose = await runCli(['status', '--verbose'], { cwd: p.dir, env });
    expect(verbose.code).toBe(70);
    expect(verbose.stderr).toContain('unexpected error');
    expect(verbose.stderr).toMatch(STACK_LINE);
  });

  it('usage and store errors print no stack trace without --verbose', async () => {
    const p = projectWithFiles(2);
    writeFileSync(join(p.dir, 'junk.db'), 'not a database at all\n');
    const cases: [string[], number][] = [
      [['run', 'src', '--exec', 'true', '-j', 'many'], 2],
      [['run', 'src', '--exec', 'true', '--retries', 'lots'], 2],
      [['run', 'src', '--exec', 'true', '--no-such-flag'], 2],
      [['run', 'nowhere', '--exec', 'true'], 2],
      [['status', '--db', 'junk.db'], 4],
      [['tasks', '--db', 'junk.db'], 4],
    ];
    for (const [args, code] of cases) {
      const r = await runCli(args, { cwd: p.dir });
      expect(r.code, args.join(' ')).toBe(code);
      expect(r.stderr.trim().length, args.join(' ')).toBeGreaterThan(0);
      expect(r.stderr, args.join(' ')).not.toMatch(STACK_LINE);
      expect(r.stderr, args.join(' ')).not.toContain('unexpected error');
    }
    expect(existsSync(dbPathIn(p.dir))).toBe(false);
  });

  it('a usage error shows its stack with --verbose, still exit 2 with the same message', async () => {
    const p = projectWithFiles(1);
    const plain = await runCli(['run', 'src', '--exec', 'true', '-j', 'many'], { cwd: p.dir });
    const verbose = await runCli(['run', 'src', '--exec', 'true', '-j', 'many', '--verbose'], { cwd: p.dir });
    expect(verbose.code).toBe(2);
    expect(verbose.stderr.split('\n')[0]).toBe(plain.stderr.split('\n')[0]);
    expect(verbose.stderr).toMatch(STACK_LINE);
  });
});
