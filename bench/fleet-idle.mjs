// Idle hosts (docs/postgres-fleet.md): what N hosts cost the server while their batch has
// nothing for them, and how long after the batch ends elsewhere they notice. The batch's one
// task is held RUNNING by an owner on another (simulated) host whose lease does not expire, so
// every host's coordinator polls with its slots free; after FLEET_IDLE_MS the bench settles
// that task, and each host runs until its coordinator sees the batch done.
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { BIN, fail, work } from './measure.mjs';
import { cpuUs, serverCpuUs } from './fleet-server.mjs';
import { enqueueFleetBatch, schemaUrl } from './fleet-batch.mjs';

const BUSY_OWNER = 'fleet-busy/sim/1:1:1';
const BASELINE_MS = 5000;
const FOLLOWERS = 8;

/**
 * One N: server CPU per idle host and second, the statements an idle host sends a second, and
 * the delay from the batch's end to each host's coordinator returning (p50 and most).
 */
export async function idleFleet(server, cfg, n, startProcs) {
  const schema = `fleet_idle_${process.pid}_${n}`;
  const db = enqueueFleetBatch(server.url, schema, 1);
  const sql = new pg.Client({ connectionString: server.url });
  await sql.connect();
  try {
    const q = async (text, values) => (await sql.query(text, values)).rows;
    // Held by a live host elsewhere: its lease runs an hour, so nobody may take it.
    await q(`UPDATE ${schema}.tasks SET status = 'RUNNING', lease_owner = $1, lease_token = 0, lease_expires_at = $2, finished_at = NULL`, [BUSY_OWNER, Date.now() + 3_600_000]);
    const procs = startProcs(cfg, db, n);
    await Promise.all(procs.map((p) => p.line()));
    const statements = !server.shared && (await q(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`).then(() => true, () => false));
    const pm = server.postmaster();
    const cpu = () => ({ server: pm ? serverCpuUs(pm) : NaN, client: procs.reduce((s, p) => s + cpuUs(p.child.pid), 0) });
    // The server's own upkeep (checkpointer, WAL writer, statistics) while the hosts wait for `go`
    // with their stores open: subtracted from what the idle hosts cost.
    const base0 = cpu().server;
    const b0 = process.hrtime.bigint();
    await new Promise((r) => setTimeout(r, Math.min(BASELINE_MS, cfg.idleMs)));
    const baseline = (cpu().server - base0) / (Number(process.hrtime.bigint() - b0) / 1e9);
    for (const p of procs) p.send('go');
    // The first seconds are the hosts' first claims and upkeep: measure from then on.
    await new Promise((r) => setTimeout(r, Math.min(2000, cfg.idleMs / 4)));
    if (statements) await q('SELECT pg_stat_statements_reset()');
    const before = cpu();
    const t0 = process.hrtime.bigint();
    await new Promise((r) => setTimeout(r, cfg.idleMs));
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const after = cpu();
    const calls = statements ? Number((await q(`SELECT coalesce(sum(calls), 0)::float8 AS calls FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT ILIKE '%pg_stat%'`))[0].calls) : NaN;
    const endedAt = Date.now();
    await q(`UPDATE ${schema}.tasks SET status = 'SUCCESS', lease_owner = NULL, lease_expires_at = NULL, finished_at = $1`, [endedAt]);
    const reports = (await Promise.all(procs.map((p) => p.line()))).flatMap((l) => JSON.parse(l));
    const stops = reports.filter((r) => r.stop !== 'done');
    if (stops.length) fail(`idle fleet: ${stops.length} hosts stopped by ${stops[0].stop}`);
    for (const p of procs) p.send('close');
    await Promise.all(procs.map((p) => p.exited));
    await q(`DROP SCHEMA ${schema} CASCADE`);
    const noticed = reports.map((r) => r.endedAt - endedAt).sort((a, b) => a - b);
    return {
      hosts: n,
      serverUsPerHostSecond: (after.server - before.server - baseline * seconds) / (n * seconds),
      baselineUsPerSecond: baseline,
      clientUsPerHostSecond: (after.client - before.client) / (n * seconds),
      callsPerHostSecond: calls / (n * seconds),
      noticedP50: noticed[Math.floor(noticed.length / 2)],
      noticedMax: noticed[noticed.length - 1],
    };
  } finally {
    await sql.end();
  }
}

export function idleTable(runs, cfg, followers) {
  const f = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '—');
  return [
    `Idle hosts: each host's slots free for ${cfg.idleMs / 1000} s while the batch's one task runs on another host, then that task ends. Server CPU net of the server's own upkeep, measured for ${Math.min(BASELINE_MS, cfg.idleMs) / 1000} s before (${runs.map((r) => `${(r.baselineUsPerSecond / 1000).toFixed(1)} ms/s`).join(', ')}).`,
    '',
    '| hosts | server CPU µs per host-second | client CPU µs per host-second | statements per host-second | batch end noticed after, p50 / most ms |',
    '| --- | --- | --- | --- | --- |',
    ...runs.map((r) => `| ${r.hosts} | ${f(r.serverUsPerHostSecond)} | ${f(r.clientUsPerHostSecond)} | ${f(r.callsPerHostSecond, 1)} | ${f(r.noticedP50)} / ${f(r.noticedMax)} |`),
    ...(followers ? ['', `Between batches: ${followers.followers} \`worker --follow\` processes on a store with no work cost the server ${f(followers.serverUsPerFollowerSecond)} µs of CPU per follower-second.`] : []),
  ].join('\n');
}

/**
 * `worker --follow` on a store with no work: FOLLOWERS real CLI processes, each polling for new
 * batches. Server CPU per follower and second, net of the server's own upkeep.
 */
export async function idleFollowers(server, seconds) {
  const pm = server.postmaster();
  if (!pm) return null;
  const schema = `fleet_follow_${process.pid}`;
  const db = schemaUrl(server.url, schema);
  const file = join(work, 'fleet-follow.txt');
  writeFileSync(file, 'x\n');
  const made = spawnSync(process.execPath, [BIN, 'run', file, '--db', db, '--lines', '1', '--exec', 'true', '--quiet'], { cwd: work, encoding: 'utf8' });
  if (made.status !== 0) fail(`the followers' store: run exited ${made.status}: ${made.stderr.trim()}`);
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const baselineMs = Math.min(BASELINE_MS, seconds * 1000);
  let t0 = serverCpuUs(pm);
  await sleep(baselineMs);
  const baseline = (serverCpuUs(pm) - t0) / (baselineMs / 1000);
  const kids = Array.from({ length: FOLLOWERS }, () => spawn(process.execPath, [BIN, 'worker', '--follow', '--db', db, '--quiet'], { cwd: work, stdio: 'ignore' }));
  try {
    await sleep(Math.min(3000, seconds * 1000)); // started, first looks done
    t0 = serverCpuUs(pm);
    await sleep(seconds * 1000);
    return { followers: FOLLOWERS, serverUsPerFollowerSecond: ((serverCpuUs(pm) - t0) / seconds - baseline) / FOLLOWERS };
  } finally {
    await Promise.all(kids.map((k) => new Promise((r) => (k.exitCode !== null ? r() : (k.once('exit', r), k.kill('SIGTERM'))))));
    const sql = new pg.Client({ connectionString: server.url });
    await sql.connect();
    await sql.query(`DROP SCHEMA ${schema} CASCADE`).finally(() => sql.end());
  }
}
