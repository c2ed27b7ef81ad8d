import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonOf, mainIn } from '../helpers/in-process-cli.js';
import { PG_URL, pgSchemas } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';

// The reading and repairing commands on a PostgreSQL store, called in-process (several
// coordinators and kills on PostgreSQL: test/reliability/postgres-kills.test.ts, test/e2e/worker.test.ts).

/** A fresh schema on the test server for one test. */
const freshDb = pgSchemas('cli');

describe.skipIf(!PG_URL)('the CLI on a shared PostgreSQL store', () => {
  it('status, tasks, show, retry-failed and report work on PostgreSQL', async () => {
    const { db } = freshDb();
    const p = projectWithFiles(4);
    const r = await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', 'test {key} != f002.log || { echo nope >&2; exit 3; }', '--retries', '0']);
    expect(r.code, r.stderr).toBe(1);
    const statusRun = await mainIn(p.dir, ['status', '--db', db, '--json']);
    const status = JSON.parse(statusRun.stdout) as { source: string; topErrors: unknown[] };
    expect(status).toMatchObject({ total: 4, succeeded: 3, failed: 1, done: true });
    expect(status.topErrors[0]).toMatchObject({ error: 'exit code 3: nope', count: 1 });
    const tasks = await jsonOf<{ key: string }[]>(p.dir, ['tasks', '--db', db, '--status', 'FAILED']);
    expect(tasks.map((t) => t.key)).toEqual(['f002.log']);
    const show = await jsonOf<{ attempts: { outcome: string }[] }>(p.dir, ['show', 'f002.log', '--db', db]);
    expect(show.attempts.map((x) => x.outcome)).toEqual(['FAILED']);
    const report = await mainIn(p.dir, ['report', '--db', db, '--html', join(p.dir, 'r.html')]);
    expect(report.code, report.stderr).toBe(0);
    const retry = await mainIn(p.dir, ['retry-failed', '--db', db, '--run', '--json']);
    expect(retry.code).toBe(1); // still failing, but it ran again
    const again = await jsonOf<{ attempts: unknown[] }>(p.dir, ['show', 'f002.log', '--db', db]);
    expect(again.attempts).toHaveLength(2);
    expect(r.stderr + status.source).not.toContain(':postgres@'); // the password is never printed
  });
});
