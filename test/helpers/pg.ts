import pg from 'pg';
import { afterAll } from 'vitest';
import { missing } from './services.js';

/** The PostgreSQL test server (`source .ci/start-postgres.sh` sets it); tests skip without it. */
export const PG_URL = missing('postgres', 'the PostgreSQL tests') ? undefined : process.env.SPLITDANCE_PG_URL;

/** One query on the test server, on a connection of its own (as a suspicious user would look). */
export async function pgQuery<T>(text: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/**
 * Fresh schemas for one test file, dropped when the file is done: call at its top level. Each
 * call of the returned function gives a new schema and the `--db` URL that selects it.
 */
export function pgSchemas(prefix: string): () => { db: string; schema: string } {
  const made: string[] = [];
  afterAll(async () => {
    if (PG_URL) for (const s of made) await pgQuery(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  });
  return () => {
    const schema = `${prefix}_${process.pid}_${made.length}_${Date.now() % 100000}`;
    made.push(schema);
    return { db: `${PG_URL}${PG_URL!.includes('?') ? '&' : '?'}schema=${schema}`, schema };
  };
}
