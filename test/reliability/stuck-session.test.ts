import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { handler, runCli, sleep, startCli, waitFor } from '../helpers/cli.js';
import { mainIn, mainInEnv, withProcessEnv } from '../helpers/in-process-cli.js';
import { PG_URL, pgQuery, pgSchemas } from '../helpers/pg.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { countBy, sideEffects } from '../helpers/store.js';
import { startProxy } from '../helpers/tcp-proxy.js';

// R32: a host frozen (SIGSTOP) in the middle of a PostgreSQL transaction keeps that
// transaction's row locks for as long as it is frozen. The server ends such a session
// (idle_in_transaction_session_timeout, set on every session of the store), and another host's
// recovery skips rows it cannot lock instead of waiting out the lock timeout: the other host
// keeps working, and takes the frozen host's tasks once their lease and the locks are gone.
// The hosts are CLI processes (one is stopped, its network cut); the batch is enqueued and
// read in-process. Which rows host A holds locked, and its LOST attempts, are read with SQL:
// no command names a lease owner's rows.

const freshDb = pgSchemas('stuck');

/** The batch's counts as `status --json` gives them: how many tasks, how many succeeded. */
async function finished(cwd: string, db: string): Promise<{ total: number; succeeded: number }> {
  const r = await mainIn(cwd, ['status', '--json', '--db', db]);
  const { total, succeeded } = JSON.parse(r.stdout) as { total: number; succeeded: number };
  return { total, succeeded };
}

const stateOf = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2];
  } catch {
    return 'gone';
  }
};

/** The local ports of `pid`'s connections to the server: its sessions in pg_stat_activity. */
function clientPorts(pid: number): number[] {
  const port = new URL(PG_URL!).port || '5432';
  const out = execFileSync('ss', ['-tnpH', `dport = :${port}`], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((l) => l.includes(`pid=${pid},`))
    .map((l) => Number(l.trim().split(/\s+/)[3]!.split(':').pop()));
}

const sessionsOf = (ports: number[]) =>
  pgQuery<{ state: string }>(`SELECT state FROM pg_stat_activity WHERE client_port = ANY($1::int[]) AND client_addr IS NOT NULL`, [ports]);

describe.skipIf(!PG_URL)('a host frozen in the middle of a transaction (R32)', () => {
  it('a host cut off from the server in the middle of a transaction: the other host keeps working, the cut-off one exits 4 naming the outage', async () => {
    const { db } = freshDb();
    const p = projectWithFiles(24, 'sd-cutoff-');
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '300', SPLITDANCE_BUSY_TIMEOUT_MS: '2000' };
    const common = ['-j', '2', '--lease', '2s'];
    const enqueued = await withProcessEnv(env, () => mainInEnv(p.dir, ['run', 'src', '--db', db, '--handler', handler('record'), '--retries', '3', ...common, '--max-runtime', '1ms'], env));
    expect(enqueued.code, enqueued.stderr).toBe(3);
    // Host A reaches the server through a proxy; it stops inside a heartbeat transaction, its
    // network is cut there (the proxy stops forwarding, closing nothing), and it goes on.
    const proxy = await startProxy(new URL(PG_URL!));
    try {
      const viaProxy = new URL(db);
      viaProxy.host = `127.0.0.1:${proxy.port}`;
      const a = startCli(['worker', '--db', viaProxy.href, ...common], {
        cwd: p.dir,
        env: { ...env, SPLITDANCE_HOST_ID: 'host-a', SPLITDANCE_FAILPOINT: 'freeze:2', SPLITDANCE_QUERY_TIMEOUT_MS: '2000', SPLITDANCE_RECONNECT_MS: '3000' },
        timeoutMs: 120_000,
      });
      await waitFor(() => stateOf(a.pid!) === 'T', 30_000, 'host A stopped mid-transaction');
      proxy.freeze();
      process.kill(a.pid!, 'SIGCONT');

      const b = await runCli(['worker', '--db', db, ...common], { cwd: p.dir, env: { ...env, SPLITDANCE_HOST_ID: 'host-b' }, timeoutMs: 90_000 });
      expect(b.signal, `host B hung: ${b.stderr}`).toBeNull();
      expect(b.code, b.stderr).toBe(0);
      expect(b.stderr).not.toMatch(/locked/);
      expect(await finished(p.dir, db)).toEqual({ total: 24, succeeded: 24 });

      const r = await a.result;
      expect(r.signal, `host A hung: ${r.stderr}`).toBeNull();
      expect(r.code, r.stderr).toBe(4);
      expect(r.stderr).toMatch(/^splitdance: error: the store stayed unavailable for /m);
      expect(r.stderr).not.toMatch(/unexpected error|\n\s+at /);
    } finally {
      proxy.close();
    }
    await sleep(200);
    expect(processesWithEnv(p.dir)).toEqual([]);
  }, 120_000);

  it('another host keeps working (no lock timeout, no exit 4), the server ends the frozen session, and every task succeeds', async () => {
    const { db, schema } = freshDb();
    const p = projectWithFiles(24, 'sd-stuck-');
    // A lock timeout of 2 s: before the fix, host B gave up on host A's locked rows after it.
    const env = { SIDE_EFFECT_LOG: p.log, SLEEP_MS: '300', SPLITDANCE_BUSY_TIMEOUT_MS: '2000' };
    const common = ['--db', db, '-j', '2', '--lease', '2s'];
    const enqueued = await withProcessEnv(env, () => mainInEnv(p.dir, ['run', 'src', '--handler', handler('record'), '--retries', '3', ...common, '--max-runtime', '1ms'], env));
    expect(enqueued.code, enqueued.stderr).toBe(3);

    // Host A stops itself inside its second lease heartbeat: its RUNNING rows stay locked.
    const a = startCli(['worker', ...common], {
      cwd: p.dir,
      env: { ...env, SPLITDANCE_HOST_ID: 'host-a', SPLITDANCE_FAILPOINT: 'freeze:2' },
      timeoutMs: 120_000,
    });
    try {
      await waitFor(() => stateOf(a.pid!) === 'T', 30_000, 'host A frozen mid-transaction');
      const held = await pgQuery<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.tasks WHERE status = 'RUNNING' AND lease_owner LIKE 'host-a/%'`);
      expect(held[0]!.n).toBeGreaterThan(0);
      const ports = clientPorts(a.pid!);
      expect((await sessionsOf(ports)).map((s) => s.state)).toContain('idle in transaction');

      const b = await runCli(['worker', ...common], { cwd: p.dir, env: { ...env, SPLITDANCE_HOST_ID: 'host-b' }, timeoutMs: 90_000 });
      expect(b.signal, `host B hung: ${b.stderr}`).toBeNull();
      expect(b.code, b.stderr).toBe(0);
      expect(b.stderr).not.toMatch(/locked/);

      expect(await finished(p.dir, db)).toEqual({ total: 24, succeeded: 24 });
      // A's tasks came back through recovery (LOST), once its lease and its locks were gone.
      const lost = await pgQuery<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.attempts WHERE outcome = 'LOST' AND host = 'host-a'`);
      expect(lost[0]!.n).toBeGreaterThan(0);
      // The frozen session was ended by the server, not left holding its locks.
      expect((await sessionsOf(ports)).map((s) => s.state)).not.toContain('idle in transaction');
    } finally {
      if (stateOf(a.pid!) === 'T') process.kill(a.pid!, 'SIGCONT');
    }
    // Woken, host A finds its session gone and its tasks taken: it rides that out and ends.
    const r = await a.result;
    expect(r.signal, `host A hung after waking: ${r.stderr}`).toBeNull();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    const ends = countBy(sideEffects(p.log), (e) => e.key);
    expect([...ends.keys()].sort()).toEqual([...p.keys].sort());
    await sleep(200);
    expect(processesWithEnv(p.dir)).toEqual([]);
  }, 120_000);
});
