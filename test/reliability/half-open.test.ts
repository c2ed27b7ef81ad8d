import { afterEach, describe, expect, it } from 'vitest';
import { handler, sleep, startCli, waitFor, type CliResult } from '../helpers/cli.js';
import { PG_URL, pgQuery, pgSchemas } from '../helpers/pg.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { logEntries } from '../helpers/store.js';
import { startProxy, type Proxy } from '../helpers/tcp-proxy.js';

// R33: a half-open connection — a partition that drops every packet without closing anything —
// is an outage like a refused connection: the run gives up at the outage limit with exit 4 and
// one line, never hangs, never reports an "unexpected error". The partition is a loopback TCP
// proxy in front of the test server (test/helpers/tcp-proxy.ts) that, once frozen, keeps every
// socket open (old and new) and forwards nothing more in either direction.

const freshDb = pgSchemas('halfopen');

let proxy: Proxy | undefined;
afterEach(() => proxy?.close());

describe.skipIf(!PG_URL)('a half-open connection to PostgreSQL (R33)', () => {
  it('a proxy that stops forwarding without closing mid-run: exit 4 naming the outage in one line within the limits, no hang, no process left', async () => {
    const { db, schema } = freshDb();
    proxy = await startProxy(new URL(PG_URL!));
    const url = new URL(db);
    url.host = `127.0.0.1:${proxy.port}`;
    const p = projectWithFiles(200, 'sd-halfopen-');
    // Short limits, so the test takes seconds: a statement unanswered for 4 s is a lost
    // connection (a connection attempt gets 4 s too), and an outage of 5 s ends the run.
    const queryTimeoutMs = 4000;
    const limitMs = 5000;
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '100', SPLITDANCE_QUERY_TIMEOUT_MS: String(queryTimeoutMs), SPLITDANCE_RECONNECT_MS: String(limitMs) };
    const run = startCli(['run', 'src', '--db', url.href, '--handler', handler('record'), '-j', '2', '--lease', '30s'], {
      cwd: p.dir,
      env,
      timeoutMs: 60_000,
    });
    await waitFor(() => logEntries(p.log).filter((e) => e.type === 'end').length >= 6, 30_000, 'a few attempts done');
    proxy.freeze();
    const frozenAt = Date.now();
    const r: CliResult = await run.result;
    const took = Date.now() - frozenAt;
    expect(r.signal, `hung: ${r.stderr}`).toBeNull();
    expect(r.code, r.stderr).toBe(4);
    const errors = r.stderr.split('\n').filter((l) => /error/i.test(l));
    expect(errors, r.stderr).toEqual([expect.stringMatching(/^splitdance: error: the store stayed unavailable for .* \(limit 5s\): .*PostgreSQL at 127\.0\.0\.1:\d+/)]);
    expect(r.stderr).not.toMatch(/unexpected error|\n\s+at /);
    // The outage counts from when the unanswered statement was sent, and the run gives up at the
    // limit even while a connection attempt is still waiting; closing the store allows the calls
    // still running 1 s before it cuts them. The bound adds less than one connection attempt
    // (4 s) for a loaded machine: before, a last connection attempt, the final commit and the
    // close each waited up to 4 s more on the silent network (13.6 s measured; 6.3 s after).
    expect(took).toBeLessThan(limitMs + 1000 + queryTimeoutMs);
    await sleep(300);
    expect(processesWithEnv(p.dir)).toEqual([]);
    // Nothing the run could not commit was lost: its tasks are still there to resume.
    const [{ n }] = await pgQuery<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.tasks`);
    expect(n).toBe(200);
  }, 90_000);
});
