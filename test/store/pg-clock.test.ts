import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mainIn, withProcessEnv } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { PG_URL, pgQuery, pgSchemas } from '../helpers/pg.js';

/**
 * One clock on a PostgreSQL store: every time the CLI writes is on the server's clock, so
 * machines whose clocks disagree still agree on leases, backoff and history. The command runs
 * in-process with this process's clock (Date.now) an hour ahead, as on a machine whose clock is
 * wrong, and so do its worker processes (NODE_OPTIONS). The times are read with SQL: what is
 * stored in those columns is what the test is about.
 */
const URL_ = PG_URL;
const SKEW_MS = 3_600_000;
const sql = pgQuery;
const freshDb = pgSchemas('clock');

afterEach(() => void vi.restoreAllMocks());

const serverNow = async () => Number((await sql<{ now: string }>('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now'))[0]!.now);

describe.skipIf(!URL_)('the PostgreSQL store keeps one clock', () => {
  it('a run from a machine whose clock is an hour ahead stamps the batch, its tasks and attempts with the server time', async () => {
    const { db, schema } = freshDb();
    const p = projectWithFiles(3);
    const skew = join(p.dir, 'skew-clock.mjs');
    writeFileSync(skew, `const real = Date.now; Date.now = () => real() + ${SKEW_MS};\n`);
    const before = await serverNow();
    const real = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => real() + SKEW_MS);
    const r = await withProcessEnv({ NODE_OPTIONS: `--import ${pathToFileURL(skew).href}` }, () => mainIn(p.dir, ['run', 'src', '--db', db, '--exec', 'true {}']));
    vi.restoreAllMocks();
    const after = await serverNow();
    expect(r.code, r.stderr).toBe(0);
    const times = await sql<{ what: string; t: string }>(
      `SELECT 'batch created' AS what, created_at AS t FROM ${schema}.batches
       UNION ALL SELECT 'batch updated', updated_at FROM ${schema}.batches
       UNION ALL SELECT 'task created', created_at FROM ${schema}.tasks
       UNION ALL SELECT 'task finished', finished_at FROM ${schema}.tasks
       UNION ALL SELECT 'attempt started', started_at FROM ${schema}.attempts
       UNION ALL SELECT 'attempt ended', ended_at FROM ${schema}.attempts`,
    );
    expect(times.length).toBe(2 + 3 * 4);
    const slack = 1000; // the offset is measured over one round trip
    for (const { what, t } of times) {
      expect(Number(t), what).toBeGreaterThanOrEqual(before - slack);
      expect(Number(t), what).toBeLessThanOrEqual(after + slack);
    }
  });
});
