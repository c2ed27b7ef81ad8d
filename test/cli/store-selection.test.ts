import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { mainIn, mainInEnv } from '../helpers/in-process-cli.js';
import { PG_URL } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn } from '../helpers/store.js';

/** The batches a store holds, as `batches --json` names them. */
const batchNames = async (cwd: string, db: string) => (JSON.parse((await mainIn(cwd, ['batches', '--json', '--db', db])).stdout) as { batch: string }[]).map((b) => b.batch);

describe('SPLITDANCE_DB', () => {
  it('selects the store for run, status, tasks, show, logs and batches; --db wins over it', async () => {
    const p = projectWithFiles(3);
    // Relative, like a user's `export SPLITDANCE_DB=stores/env.db`: resolved against the working directory.
    const env = { SPLITDANCE_DB: 'stores/env.db' };
    const envDb = join(p.dir, 'stores', 'env.db');
    const flagDb = join(p.dir, 'flag.db');

    expect((await mainInEnv(p.dir, ['run', 'src', '--batch', 'env-batch', '--exec', 'echo env-{key}'], env)).code).toBe(0);
    expect(existsSync(envDb)).toBe(true);
    expect((await mainInEnv(p.dir, ['run', 'src', '--db', flagDb, '--batch', 'flag-batch', '--exec', 'echo flag-{key}'], env)).code).toBe(0);
    expect(existsSync(dbPathIn(p.dir))).toBe(false); // the default store was never created
    expect(await batchNames(p.dir, envDb)).toEqual(['env-batch']);
    expect(await batchNames(p.dir, flagDb)).toEqual(['flag-batch']);

    for (const [extra, batch, word] of [
      [[], 'env-batch', 'env'],
      [['--db', flagDb], 'flag-batch', 'flag'],
    ] as const) {
      const what = `${word} store`;
      const status = await mainInEnv(p.dir, ['status', '--json', ...extra], env);
      expect(status.code, what).toBe(0);
      expect(JSON.parse(status.stdout), what).toMatchObject({ batch, total: 3, succeeded: 3 });
      const tasks = await mainInEnv(p.dir, ['tasks', '--json', ...extra], env);
      expect(tasks.code, what).toBe(0);
      expect(JSON.parse(tasks.stdout).map((t: { key: string }) => t.key), what).toEqual(['f000.log', 'f001.log', 'f002.log']);
      const show = await mainInEnv(p.dir, ['show', 'f001.log', '--json', ...extra], env);
      expect(show.code, what).toBe(0);
      expect(JSON.parse(show.stdout).attempts[0].outputTail, what).toContain(`${word}-f001.log`);
      const logs = await mainInEnv(p.dir, ['logs', 'f002.log', ...extra], env);
      expect(logs.code, what).toBe(0);
      expect(logs.stdout.trim(), what).toBe(`${word}-f002.log`);
      const batches = await mainInEnv(p.dir, ['batches', '--json', ...extra], env);
      expect(batches.code, what).toBe(0);
      expect(JSON.parse(batches.stdout).map((b: { batch: string }) => b.batch), what).toEqual([batch]);
    }
    expect(existsSync(dbPathIn(p.dir))).toBe(false);
  });

  it('--db wins even when SPLITDANCE_DB names a file that is not a store', async () => {
    const p = projectWithFiles(2);
    writeFileSync(join(p.dir, 'junk.db'), 'not a database at all\n');
    const env = { SPLITDANCE_DB: join(p.dir, 'junk.db') };
    expect((await mainInEnv(p.dir, ['run', 'src', '--db', 'good.db', '--exec', 'true'], env)).code).toBe(0);
    expect((await mainInEnv(p.dir, ['status', '--db', 'good.db'], env)).code).toBe(0);
    const viaEnv = await mainInEnv(p.dir, ['status'], env);
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
    expect((await mainInEnv(p.dir, ['run', 'src', '--batch', 'pg-batch', '--exec', 'echo pg-{key}'], env)).code).toBe(0);
    expect(existsSync(dbPathIn(p.dir))).toBe(false); // no SQLite store was made
    expect(JSON.parse((await mainInEnv(p.dir, ['status', '--json'], env)).stdout)).toMatchObject({ batch: 'pg-batch', total: 2, succeeded: 2 });
    expect(JSON.parse((await mainInEnv(p.dir, ['tasks', '--json'], env)).stdout)).toHaveLength(2);
    expect(JSON.parse((await mainInEnv(p.dir, ['show', 'f000.log', '--json'], env)).stdout).attempts[0].outputTail).toContain('pg-f000.log');
    expect((await mainInEnv(p.dir, ['logs', 'f001.log'], env)).stdout.trim()).toBe('pg-f001.log');
    expect(JSON.parse((await mainInEnv(p.dir, ['batches', '--json'], env)).stdout).map((b: { batch: string }) => b.batch)).toEqual(['pg-batch']);
    // --db still wins: a SQLite file given on the command line is used instead.
    const local = await mainInEnv(p.dir, ['run', 'src', '--db', 'local.db', '--batch', 'local', '--exec', 'true'], env);
    expect(local.code).toBe(0);
    expect(await batchNames(p.dir, join(p.dir, 'local.db'))).toEqual(['local']);
    expect(JSON.parse((await mainInEnv(p.dir, ['batches', '--json'], env)).stdout).map((b: { batch: string }) => b.batch)).toEqual(['pg-batch']);
  });
});
