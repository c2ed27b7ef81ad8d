import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, startCli, waitFor } from '../helpers/cli.js';
import { fakeClock } from '../helpers/faketime.js';
import { missing } from '../helpers/services.js';
import { PG_URL, pgQuery, pgSchemas } from '../helpers/pg.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { countBy, logEntries, sideEffects } from '../helpers/store.js';

// Issue 25 item 11 (R35, leases): on PostgreSQL a lease is measured on the server's clock only.
// One host's clock stepping back an hour mid-run (libfaketime on that host's processes alone)
// must not make the leases it claims and renews look expired to another host: nothing it runs
// is taken from it, nothing runs twice.

const freshDb = pgSchemas('clockleases');
const TASKS = 16;

describe.skipIf(!PG_URL || missing('faketime', 'the clock-step lease test'))('a host whose clock steps back (PostgreSQL, R35)', () => {
  it("one host's clock steps back 1 h mid-run: the other host takes none of its tasks, no attempt is LOST, each task runs once", async () => {
    const { db, schema } = freshDb();
    const p = projectWithFiles(TASKS, 'sd-clockleases-');
    const canaries = join(p.dir, 'canaries');
    mkdirSync(canaries);
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '1500', CANARY_DIR: canaries };
    const common = ['--db', db, '-j', '2', '--lease', '3s'];
    const enqueued = await runCli(['run', 'src', '--handler', handler('record'), ...common, '--max-runtime', '1ms'], { cwd: p.dir, env });
    expect(enqueued.code, enqueued.stderr).toBe(3);

    const clock = fakeClock(p.dir);
    const a = startCli(['worker', ...common], { cwd: p.dir, env: { ...env, ...clock.env, SPLITDANCE_HOST_ID: 'host-a' }, timeoutMs: 120_000 });
    const b = startCli(['worker', ...common], { cwd: p.dir, env: { ...env, SPLITDANCE_HOST_ID: 'host-b' }, timeoutMs: 120_000 });
    const heldByA = async () =>
      (await pgQuery<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.tasks WHERE status = 'RUNNING' AND lease_owner LIKE 'host-a/%'`))[0]!.n;
    const deadline = Date.now() + 60_000;
    while ((await heldByA()) === 0) {
      if (Date.now() > deadline) throw new Error('host A never claimed a task');
      await new Promise((r) => setTimeout(r, 20));
    }
    clock.step('-1h');
    const [ra, rb] = await Promise.all([a.result, b.result]);
    expect(ra.signal, `host A hung: ${ra.stderr}`).toBeNull();
    expect(rb.signal, `host B hung: ${rb.stderr}`).toBeNull();
    expect(ra.code, ra.stderr).toBe(0);
    expect(rb.code, rb.stderr).toBe(0);

    const statuses = await pgQuery<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM ${schema}.tasks GROUP BY status`);
    expect(statuses).toEqual([{ status: 'SUCCESS', n: TASKS }]);
    const outcomes = await pgQuery<{ host: string; outcome: string }>(`SELECT host, outcome FROM ${schema}.attempts WHERE outcome <> 'SUCCESS'`);
    expect(outcomes).toEqual([]);
    // Host A really worked after the step, and nobody ran a task twice.
    const hosts = await pgQuery<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.attempts WHERE host = 'host-a'`);
    expect(hosts[0]!.n).toBeGreaterThan(2);
    expect(logEntries(p.log).filter((e) => e.type === 'double')).toEqual([]);
    expect([...countBy(sideEffects(p.log), (e) => e.key).values()].every((n) => n === 1)).toBe(true);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'no process left');
  }, 120_000);
});
