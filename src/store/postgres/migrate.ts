import { StoreError } from '../../errors.js';
import type { PgDb, Sql } from './pg-db.js';
import { lockKey } from './pg-locks.js';
import { inPackage } from '../../package-root.js';
import { loadMigrations, newestVersion } from '../shared/migrations.js';

const MIGRATIONS_DIR = inPackage('src/store/postgres/migrations');

/** Read once: the migrations this build knows, and so the newest schema it understands. */
const MIGRATIONS = loadMigrations(MIGRATIONS_DIR);
const PG_SCHEMA_VERSION = newestVersion(MIGRATIONS);

/** The version table, in the store's own schema beside the tables it describes. */
const VERSION_TABLE = 'splitdance_migrations';

/** Tables every splitdance schema version has; a schema lacking them is someone else's or damaged. */
const OWN_TABLES = ['batches', 'tasks', 'attempts'];

interface SchemaState {
  /** Tables, views and the like in the schema (0 also when it does not exist). */
  relations: number;
  /** null when there is no version table. */
  version: number | null;
  missing: string[];
}

/** What the schema holds, read without taking a lock or writing anything. */
async function inspect(sql: Sql, schema: string): Promise<SchemaState> {
  const [row] = await sql.rows<{ relations: number; versioned: boolean; missing: string[] }>(
    `SELECT (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')) AS relations,
            to_regclass(format('%I.%I', $1::text, $2::text)) IS NOT NULL AS versioned,
            ARRAY(SELECT t FROM unnest($3::text[]) AS t WHERE to_regclass(format('%I.%I', $1::text, t)) IS NULL) AS missing`,
    [schema, VERSION_TABLE, OWN_TABLES],
  );
  if (!row!.versioned) return { relations: row!.relations, version: null, missing: row!.missing };
  const [v] = await sql.rows<{ version: number }>(`SELECT coalesce(max(version), 0) AS version FROM "${schema}".${VERSION_TABLE}`);
  return { relations: row!.relations, version: v!.version, missing: row!.missing };
}

/**
 * Checks the schema, then creates or upgrades it. Everything is checked with reads before
 * the first write, so a foreign or newer store is refused without a change; the upgrade
 * itself runs under a transaction-scoped advisory lock, so coordinators opening at once on
 * many machines migrate exactly once.
 */
export async function migrate(db: PgDb, { create, readonly }: { create: boolean; readonly: boolean }): Promise<void> {
  const { schema, location } = db.target;
  const state = await db.read((sql) => inspect(sql, schema));
  refuseForeign(state, schema, location);
  if (state.version === PG_SCHEMA_VERSION) return;
  if (state.version === null && (!create || readonly)) {
    throw new StoreError(
      `no splitdance store in schema ${schema} at ${location}: run \`splitdance run <source>\` first, or point --db (and ?schema=) at an existing store`,
      'NO_STORE',
    );
  }
  if (readonly) {
    throw new StoreError(`the store in schema ${schema} at ${location} has an older schema (${state.version}); run without --dry-run once to upgrade it`, 'OLD_SCHEMA');
  }
  // A schema upgrade of a big table may rightly take minutes: the long statement bound.
  await db.transaction(async (sql) => {
    await sql.run('SELECT pg_advisory_xact_lock($1::bigint)', [lockKey('migrate', schema)]);
    // Re-read under the lock: another opener may have created or migrated the schema meanwhile.
    const locked = await inspect(sql, schema);
    refuseForeign(locked, schema, location);
    const current = locked.version ?? 0;
    if (current === PG_SCHEMA_VERSION) return;
    // CREATE SCHEMA IF NOT EXISTS asks for CREATE on the database even when the schema is
    // there: a role given only its own schema (docs/trust-model.md) creates its tables in it.
    const [there] = await sql.rows<{ found: boolean }>('SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS found', [schema]);
    if (!there!.found) await sql.run(`CREATE SCHEMA "${schema}"`);
    await sql.run(`SET LOCAL search_path TO "${schema}"`);
    await sql.run(`CREATE TABLE IF NOT EXISTS ${VERSION_TABLE} (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`);
    for (const m of MIGRATIONS.filter((x) => x.version > current)) {
      await sql.run(m.sql);
      // The server's clock, like every other time the store holds (the offset is not measured yet).
      await sql.run(
        `INSERT INTO ${VERSION_TABLE} (version, name, applied_at) VALUES ($1, $2, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)`,
        [m.version, m.name],
      );
    }
  }, { long: true });
}

function refuseForeign(state: SchemaState, schema: string, location: string): void {
  if (state.version !== null && state.version > PG_SCHEMA_VERSION) {
    throw new StoreError(
      `the store in schema ${schema} at ${location} has schema version ${state.version}, newer than this splitdance understands (${PG_SCHEMA_VERSION}); upgrade splitdance`,
    );
  }
  if (state.version === null && state.relations > 0) {
    throw new StoreError(
      `schema ${schema} at ${location} holds tables but is not a splitdance store; choose another schema with ?schema=NAME`,
    );
  }
  if (state.version !== null && state.version > 0 && state.missing.length > 0) {
    throw new StoreError(
      `the store in schema ${schema} at ${location} lacks its ${state.missing.join(', ')} table(s); was it changed outside splitdance? Restore it or use another schema`,
    );
  }
}

/** The identity the store was given when its schema was created (migration 003). */
export async function readIdentity(db: PgDb): Promise<string> {
  const { schema, location } = db.target;
  const [row] = await db.read((sql) => sql.rows<{ id: string }>(`SELECT id FROM "${schema}".store_identity WHERE one = 1`));
  if (!row) {
    throw new StoreError(`the store in schema ${schema} at ${location} has lost its identity row (store_identity); was it changed outside splitdance? Restore it`);
  }
  return row.id;
}
