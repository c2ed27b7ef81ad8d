import type { EnqueueOptions, EnqueueResult, NewBatch, TaskSpec } from '../records.js';
import type { PgDb, Sql } from './pg-db.js';
import { lockKey } from './pg-locks.js';
import { toBatch, type BatchDbRow } from '../shared/db-rows.js';
import { needsColumn } from '../shared/json-columns.js';
import { stagingChunks } from '../shared/staging-chunks.js';
import type { Statements } from './statements.js';

/**
 * $1 ords bigint[] $2 keys text[] $3 payloads text[] $4 fingerprints text[] $5 stages text[] $6 items text[] $7 needs text[]
 * $8 maxAttempts int[] $9 priorities int[] $10 ranks bigint[] $11 rate keys text[]
 */
const STAGE = `
  INSERT INTO pg_temp.staging (ord, task_key, payload, fingerprint, stage, item_key, needs, max_attempts, priority, order_rank, rate_key)
  SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::int[], $10::bigint[], $11::text[])`;

/** Staged specs whose (stage, key) came before: a list's repeated items. */
const COUNT_REPEATED = 'SELECT count(*) - (SELECT count(*) FROM (SELECT DISTINCT stage, task_key FROM pg_temp.staging) d) AS n FROM pg_temp.staging';

/**
 * Create the batch if needed and insert the keys it lacks, all or nothing. Rows are first
 * streamed into a TEMP table on this session's connection, outside any transaction, so a
 * long directory walk holds no lock and no transaction open on the store; the store then
 * changes in one short transaction. A source that throws midway leaves the store as it was.
 * `now` reads the store's clock (see PostgresStore).
 */
export async function enqueue(
  db: PgDb,
  st: Statements,
  batch: NewBatch,
  specs: Iterable<TaskSpec>,
  options: EnqueueOptions,
  now: () => number,
): Promise<EnqueueResult> {
  const rerunChanged = options.rerunChanged ?? false;
  // The one INSERT of a million staged tasks may rightly take minutes: the long statement bound.
  return db.session(async (sql, transaction) => {
    await sql.run('DROP TABLE IF EXISTS pg_temp.staging');
    await sql.run(
      `CREATE TEMP TABLE staging (ord BIGINT NOT NULL, task_key TEXT COLLATE "C" NOT NULL, payload TEXT NOT NULL, fingerprint TEXT,
        stage TEXT COLLATE "C" NOT NULL, item_key TEXT COLLATE "C", needs TEXT, max_attempts INTEGER, priority INTEGER NOT NULL, order_rank BIGINT NOT NULL, rate_key TEXT COLLATE "C")`,
    );
    try {
      await stage(sql, specs);
      // Temp tables are never auto-analysed; without statistics a million-row join is planned blind.
      await sql.run('ANALYZE pg_temp.staging');
      const repeated = options.countRepeated ? Number((await sql.rows<{ n: string }>(COUNT_REPEATED))[0]!.n) : 0;
      const key = lockKey('batch', db.target.schema, batch.name);
      return { ...(await transaction((tx) => commit(tx, st, key, batch, { rerunChanged, itemPayloads: options.itemPayloads === true, rekey: options.rekey === true }, now))), repeated };
    } finally {
      // Best effort: a broken connection is discarded with its temp table; the first error is the one to report.
      await sql.run('DROP TABLE IF EXISTS pg_temp.staging').catch(() => undefined);
    }
  }, { long: true });
}

/** One staging INSERT per chunk (stagingChunks: rows and payload bytes bounded): memory bounded by one chunk. */
async function stage(sql: Sql, specs: Iterable<TaskSpec>): Promise<void> {
  let ord = 0;
  for (const rows of stagingChunks(specs)) {
    await sql.run(STAGE, [
      rows.map(() => ++ord),
      rows.map((r) => r.spec.key),
      rows.map((r) => r.payload),
      rows.map((r) => r.spec.fingerprint),
      rows.map((r) => r.spec.stage ?? ''),
      rows.map((r) => r.spec.item ?? null),
      rows.map((r) => needsColumn(r.spec.needs)),
      rows.map((r) => r.spec.maxAttempts ?? null),
      rows.map((r) => r.spec.priority ?? 0),
      rows.map((r) => r.spec.rank ?? 0),
      rows.map((r) => r.spec.rateKey ?? null),
    ]);
  }
}

async function commit(
  sql: Sql,
  st: Statements,
  key: string,
  batch: NewBatch,
  { rerunChanged, itemPayloads, rekey }: { rerunChanged: boolean; itemPayloads: boolean; rekey: boolean },
  clock: () => number,
): Promise<Omit<EnqueueResult, 'repeated'>> {
  // Serialises enqueues of one batch, its creation included, so `seq` stays unique.
  await sql.run(st.lockBatchWork, [key]);
  // The store's clock (the server's, for the CLI), read once the lock is held: rows are
  // stamped on the same clock as every claim, lease and settlement, whatever this machine's clock says.
  const now = clock();
  const inserted = await sql.rows(st.insertBatch, [batch.name, batch.source, JSON.stringify(batch.job), now]);
  const created = inserted.length === 1;
  const [row] = await sql.rows<BatchDbRow>(st.batchByName, [batch.name]);
  const batchId = row!.id;
  const [{ base }] = (await sql.rows<{ base: number }>(st.maxSeq, [batchId])) as [{ base: number }];
  const added = await sql.run(st.insertStaged, [batchId, base, batch.maxAttempts, now]);
  if (!created) await sql.run(st.foldCounts, [batchId]);
  if (itemPayloads) {
    if (!created) await sql.run(st.observeItems, [batchId]);
    const requeued = rerunChanged && !created ? await sql.run(st.requeueItems, [batchId]) : 0;
    if (!created) await sql.run(st.reorderItems, [batchId]);
    if (!created && rekey) await sql.run(st.rekeyItems, [batchId]);
    const [{ n: changed, example }] = (await sql.rows<{ n: number; example: string | null }>(st.countChangedItems, [batchId])) as [{ n: number; example: string | null }];
    return { batch: toBatch(row!), created, inserted: added, changed: Number(changed), changedExample: example, requeued };
  }
  if (!created) await sql.run(st.observeStaged, [batchId]);
  const requeued = rerunChanged ? await sql.run(st.requeueChanged, [batchId]) : 0;
  if (!created) await sql.run(st.reorderStaged, [batchId]);
  if (!created && rekey) await sql.run(st.rekeyStaged, [batchId]);
  const [{ n: changed }] = (await sql.rows<{ n: number }>(st.countChanged, [batchId])) as [{ n: number }];
  return { batch: toBatch(row!), created, inserted: added, changed, requeued };
}
