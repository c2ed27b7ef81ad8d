// Fleet: N simulated hosts on one PostgreSQL (see docs/postgres-fleet.md). Each host is a worker
// thread with its own host identity and store connection, running the real coordinator loop and
// store verbs over in-process no-op slots (bench/fleet-pool.mjs), spread over a few Node
// processes. Per N: tasks/s, server and client CPU per task, claim round trips, lock waits
// sampled, the statements that cost the server most, and an exactly-once check of the history.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { availableParallelism } from 'node:os';
import pg from 'pg';
import { SIZE, want } from './settings.mjs';
import { ROOT, benchmark, fail, work } from './measure.mjs';
import { atLeast, atMost } from './verdict.mjs';
import { cpuUs, fleetServer, serverCpuUs } from './fleet-server.mjs';
import { idleFleet, idleFollowers, idleTable } from './fleet-idle.mjs';
import { notifyCost, wakeTable } from './fleet-wake.mjs';
import { enqueueFleetBatch } from './fleet-batch.mjs';
import { groupedRow } from './fleet-group.mjs';

const DEFAULT_HOSTS = { full: [1, 4, 16, 64, 128], quick: [1, 4, 16, 64], smoke: [1, 2] };
const DEFAULT_TASKS = { full: 2000, quick: 1000, smoke: 60 };
const DEFAULT_IDLE_MS = { full: 30_000, quick: 30_000, smoke: 1000 };
// In groups (FLEET_GROUP items per attempt), enough items per N that each of 64 hosts' places
// (2 slots × a window of 2 × 64 items) is filled several times over.
const DEFAULT_GROUP = { full: 64, quick: 64, smoke: 1 };
const DEFAULT_GROUP_TASKS = { full: 128_000, quick: 64_000, smoke: 400 };

/**
 * FLEET_HOSTS (a list: 1,4,16), FLEET_TASKS (per N), FLEET_SLOTS (per host), FLEET_WINDOW (the
 * attempts a slot holds, its running one included: 2, as the real pool for tasks of 4 ms or more), FLEET_PROCS (Node
 * processes the hosts are dealt over), FLEET_SLEEP_MS (each task's sleep), FLEET_LEASE_MS,
 * FLEET_IDLE_MS (how long the idle hosts are measured at each N; 0: not at all), FLEET_SPLIT_CORES
 * (1: the private cluster on CPU 0 alone, the fleet's processes on the other CPUs), FLEET_GROUP
 * (items per attempt, as `-n` makes them: at more than 1, every N runs again in groups of that
 * many, FLEET_GROUP_TASKS items per N, for a row of its own beside the ungrouped one).
 * Refused (exit 2) before anything runs when one is not a whole number.
 */
function fleetSettings() {
  const hosts = process.env.FLEET_HOSTS ? process.env.FLEET_HOSTS.split(',') : DEFAULT_HOSTS[SIZE];
  if (hosts.some((n) => !/^\d+$/.test(String(n)) || Number(n) < 1)) refuse('FLEET_HOSTS', 'a comma-separated list of whole numbers ≥ 1');
  const whole = (name, fallback, min) => {
    const v = process.env[name] ?? String(fallback);
    if (!/^\d+$/.test(v) || Number(v) < min) refuse(name, `a whole number ≥ ${min}`);
    return Number(v);
  };
  return {
    hosts: hosts.map(Number),
    tasks: whole('FLEET_TASKS', DEFAULT_TASKS[SIZE], 1),
    slots: whole('FLEET_SLOTS', 2, 1),
    window: whole('FLEET_WINDOW', 2, 1),
    procs: whole('FLEET_PROCS', 2, 1),
    sleepMs: whole('FLEET_SLEEP_MS', 0, 0),
    leaseMs: whole('FLEET_LEASE_MS', 30_000, 1),
    idleMs: whole('FLEET_IDLE_MS', DEFAULT_IDLE_MS[SIZE], 0),
    splitCores: whole('FLEET_SPLIT_CORES', 0, 0) > 0,
    group: whole('FLEET_GROUP', DEFAULT_GROUP[SIZE], 1),
    groupTasks: whole('FLEET_GROUP_TASKS', DEFAULT_GROUP_TASKS[SIZE], 1),
  };
}

function refuse(name, what) {
  console.error(`${name} must be ${what}, not "${process.env[name]}"`);
  process.exit(2);
}

const SETTINGS = want('fleet') ? fleetSettings() : null;

const pct = (xs, p) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] : NaN);

export async function fleet() {
  benchmark('fleet');
  const cfg = SETTINGS;
  // The store's pool holds up to 4 connections a host; room for the sampler and a few more.
  if (cfg.splitCores && availableParallelism() < 2) fail('FLEET_SPLIT_CORES needs 2 CPUs or more');
  const server = fleetServer(4 * Math.max(...cfg.hosts) + 20, cfg.splitCores ? 0 : null);
  if (!server) fail(cfg.splitCores ? 'FLEET_SPLIT_CORES needs a private cluster: root with the server binaries' : 'needs PostgreSQL: root with the server binaries (a private cluster), or SPLITDANCE_PG_URL');
  try {
    const single = { ...cfg, group: 1 };
    const runs = [];
    for (const n of cfg.hosts) runs.push(await oneFleet(server, single, n));
    const inGroups = { ...cfg, tasks: cfg.groupTasks };
    const grouped = [];
    for (const n of cfg.group > 1 ? cfg.hosts : []) grouped.push(await oneFleet(server, inGroups, n));
    const idle = [];
    for (const n of cfg.idleMs ? cfg.hosts : []) {
      const r = await idleFleet(server, single, n, startProcs);
      console.log(`fleet ${n} idle hosts: server ${r.serverUsPerHostSecond.toFixed(0)} µs per host-second, ${r.callsPerHostSecond.toFixed(1)} statements per host-second, batch end noticed after ${r.noticedP50} ms (most ${r.noticedMax} ms)`);
      idle.push(r);
    }
    const wake = [];
    for (const n of cfg.idleMs ? cfg.hosts : []) {
      const r = await notifyCost(server, n, Math.min(3000, cfg.idleMs));
      if (r) console.log(`fleet ${n} listeners: quiet ${r.quietUsPerListenerSecond.toFixed(0)} µs per listener-second, ${r.serverUsPerNotify.toFixed(0)} µs per notification`);
      if (r) wake.push(r);
    }
    const followers = cfg.idleMs ? await idleFollowers(server, cfg.idleMs / 1000) : null;
    if (followers) console.log(`fleet ${followers.followers} idle \`worker --follow\`: server ${followers.serverUsPerFollowerSecond.toFixed(0)} µs per follower-second`);
    const text =
      detail(runs, single, server) +
      (grouped.length ? `\n${detail(grouped, inGroups, server)}` : '') +
      (idle.length ? `\n${idleTable(idle, cfg, followers)}\n` : '') +
      (wake.length ? `\n${wakeTable(wake)}\n` : '');
    console.log(`\n${text}`);
    writeFileSync(join(work, 'fleet.md'), text);
    const at = (n) => runs.find((r) => r.hosts === n);
    const big = at(64) ?? runs[runs.length - 1];
    const one = at(1) ?? runs[0];
    const broken = runs.filter((r) => r.violations.length);
    const row = {
      benchmark: 'fleet',
      workload: `${cfg.tasks} no-op tasks per N, N hosts × ${cfg.slots} slots (${server.shared ? 'shared server' : 'private cluster'})`,
      entries: runs.map((r) => ({ name: `${r.hosts} host${r.hosts > 1 ? 's' : ''}`, rate: r.rate, note: `server ${r.serverUs.toFixed(0)} µs/task, client ${r.clientUs.toFixed(0)} µs/task` })),
      goals: [
        atMost(`server CPU ≤ 100 µs per task at ${big.hosts} hosts`, big.serverUs, 100, `${big.serverUs.toFixed(0)} µs`),
        atLeast(`${big.hosts} hosts ≥ 3× one host's rate`, big.rate, 3 * one.rate, `${(big.rate / one.rate).toFixed(2)}×`),
        atMost('every task ran exactly once at every N', broken.length, 0, broken.length ? broken.map((r) => `${r.hosts}: ${r.violations.join(', ')}`).join('; ') : 'yes'),
      ],
    };
    return grouped.length ? [row, groupedRow(runs, grouped, inGroups, server)] : [row];
  } finally {
    server.stop();
  }
}

async function oneFleet(server, cfg, n) {
  const schema = `fleet_${process.pid}_${n}${cfg.group > 1 ? `_g${cfg.group}` : ''}`;
  const db = enqueueFleetBatch(server.url, schema, cfg.tasks);
  const sql = new pg.Client({ connectionString: server.url });
  await sql.connect();
  try {
    const q = async (text) => (await sql.query(text)).rows;
    const [{ pending }] = await q(`SELECT count(*)::int AS pending FROM ${schema}.tasks WHERE status = 'PENDING'`);
    const procs = startProcs(cfg, db, n);
    await Promise.all(procs.map((p) => p.line()));
    const statements = !server.shared && (await q(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`).then(() => true, () => false));
    if (statements) await q('SELECT pg_stat_statements_reset()');
    const pm = server.postmaster();
    const cpu = () => ({ server: pm ? serverCpuUs(pm) : NaN, client: procs.reduce((s, p) => s + cpuUs(p.child.pid), 0) });
    const before = cpu();
    const t0 = process.hrtime.bigint();
    for (const p of procs) p.send('go');
    const sampling = sampleLocks(sql);
    const reports = (await Promise.all(procs.map((p) => p.line()))).flatMap((l) => JSON.parse(l));
    const wall = Number(process.hrtime.bigint() - t0) / 1e9;
    const after = cpu();
    const locks = await sampling.stop();
    const top = statements ? await topStatements(q, pending) : [];
    const violations = await exactlyOnce(q, schema, cfg.tasks);
    const stops = reports.filter((r) => r.stop !== 'done');
    if (stops.length) violations.push(`${stops.length} hosts stopped by ${stops[0].stop}`);
    for (const p of procs) p.send('close');
    await Promise.all(procs.map((p) => p.exited));
    await q(`DROP SCHEMA ${schema} CASCADE`);
    const claims = reports.flatMap((r) => r.claims).sort((a, b) => a - b);
    const run = {
      hosts: n,
      tasks: pending,
      rate: pending / wall,
      serverUs: (after.server - before.server) / pending,
      clientUs: (after.client - before.client) / pending,
      claimsPerTask: claims.length / pending,
      p50: pct(claims, 50) / 1e3,
      p99: pct(claims, 99) / 1e3,
      locks,
      top,
      violations,
    };
    // Said at once, so that a later N that fails leaves this one's figures behind.
    console.log(findings(run).join('\n'));
    console.log(`fleet ${n} hosts: ${run.rate.toFixed(0)} tasks/s, server ${run.serverUs.toFixed(0)} µs/task, client ${run.clientUs.toFixed(0)} µs/task, claim p50 ${run.p50.toFixed(1)} ms p99 ${run.p99.toFixed(1)} ms, lock waiters max ${locks.max}${violations.length ? `, VIOLATIONS ${violations.join(', ')}` : ''}`);
    return run;
  } finally {
    await sql.end();
  }
}

/** The hosts `h1`…`hN`, dealt over at most FLEET_PROCS processes. */
function startProcs(cfg, db, n) {
  const groups = Array.from({ length: Math.min(n, cfg.procs) }, () => []);
  for (let i = 0; i < n; i++) groups[i % groups.length].push(`fleet-h${i + 1}`);
  return groups.map((hosts) => {
    const config = { dist: join(ROOT, 'dist'), db, batch: 'B', slots: cfg.slots, window: cfg.window, group: cfg.group, sleepMs: cfg.sleepMs, leaseMs: cfg.leaseMs, logDir: join(work, 'fleet-logs'), hosts };
    const argv = [process.execPath, join(ROOT, 'bench/fleet-proc.mjs'), JSON.stringify(config)];
    // taskset execs the command in its own process: the child's pid is the fleet process's.
    const [cmd, ...args] = cfg.splitCores ? ['taskset', '-c', `1-${availableParallelism() - 1}`, ...argv] : argv;
    const child = spawn(cmd, args, { cwd: work, stdio: ['pipe', 'pipe', 'inherit'] });
    const waiting = [];
    const got = [];
    createInterface({ input: child.stdout }).on('line', (l) => (waiting.length ? waiting.shift()(l) : got.push(l)));
    const exited = new Promise((resolve) => child.on('exit', resolve));
    exited.then((code) => code !== 0 && fail(`a fleet process exited ${code}`));
    return {
      child,
      exited,
      line: () => (got.length ? Promise.resolve(got.shift()) : new Promise((resolve) => waiting.push(resolve))),
      send: (msg) => child.stdin.write(`${msg}\n`),
    };
  });
}

/** Every 50 ms: how many of the server's sessions wait on a lock, and on what (the hot row, if any). */
function sampleLocks(sql) {
  const seen = { samples: 0, waiting: 0, max: 0, kinds: {} };
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      const { rows } = await sql.query(`SELECT wait_event AS kind, left(regexp_replace(query, '\\s+', ' ', 'g'), 70) AS query FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()`);
      seen.samples++;
      seen.waiting += rows.length;
      seen.max = Math.max(seen.max, rows.length);
      for (const r of rows) seen.kinds[`${r.kind}: ${r.query}`] = (seen.kinds[`${r.kind}: ${r.query}`] ?? 0) + 1;
    } finally {
      busy = false;
    }
  }, 50);
  return {
    async stop() {
      clearInterval(timer);
      while (busy) await new Promise((r) => setTimeout(r, 5));
      const kinds = Object.entries(seen.kinds).sort((a, b) => b[1] - a[1]).slice(0, 3);
      return { samples: seen.samples, mean: seen.samples ? seen.waiting / seen.samples : 0, max: seen.max, kinds };
    },
  };
}

/** The statements that cost the server most execution time, per task. */
async function topStatements(q, tasks) {
  const rows = await q(
    `SELECT calls::float8 AS calls, total_exec_time AS ms, (shared_blks_hit + shared_blks_read)::float8 / greatest(calls, 1) AS pages, regexp_replace(query, '\\s+', ' ', 'g') AS query FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT ILIKE '%pg_stat%' ORDER BY total_exec_time DESC LIMIT 6`,
  );
  return rows.map((r) => ({ perTask: r.calls / tasks, usPerTask: (r.ms * 1e3) / tasks, pagesPerCall: r.pages, query: r.query.slice(0, 90) }));
}

// A LOST attempt's end is unknown (ended_at stays NULL until a late report): it is counted among
// the attempts not SUCCESS, not as overlapping the attempt that took its task over.
const UNKNOWN_END = (a) => `(${a}.outcome = 'LOST' AND ${a}.ended_at IS NULL)`;

/** Every task SUCCESS with exactly one successful attempt, and no two attempts of a task overlapping in time. */
async function exactlyOnce(q, schema, total) {
  const [c] = await q(`SELECT
      (SELECT count(*)::int FROM ${schema}.tasks) AS tasks,
      (SELECT count(*)::int FROM ${schema}.tasks WHERE status <> 'SUCCESS') AS unfinished,
      (SELECT count(*)::int FROM ${schema}.tasks t WHERE (SELECT count(*) FROM ${schema}.attempts a WHERE a.task_id = t.id AND a.outcome = 'SUCCESS') <> 1) AS not_once,
      (SELECT count(*)::int FROM ${schema}.attempts WHERE outcome IS DISTINCT FROM 'SUCCESS') AS others,
      (SELECT count(*)::int FROM ${schema}.attempts a JOIN ${schema}.attempts b ON a.task_id = b.task_id AND a.id < b.id
        AND a.started_at < coalesce(b.ended_at, 9223372036854775807) AND b.started_at < coalesce(a.ended_at, 9223372036854775807)
        AND NOT ${UNKNOWN_END('a')} AND NOT ${UNKNOWN_END('b')}) AS overlapping`);
  const v = [];
  if (c.tasks !== total) v.push(`${c.tasks} tasks, not ${total}`);
  if (c.unfinished) v.push(`${c.unfinished} not SUCCESS`);
  if (c.not_once) v.push(`${c.not_once} without exactly one successful attempt`);
  // Nothing crashes and nothing fails here: any other attempt is a lease lost (LOST) or worse.
  if (c.others) v.push(`${c.others} attempts not SUCCESS`);
  if (c.overlapping) v.push(`${c.overlapping} overlapping attempt pairs`);
  return v;
}

function detail(runs, cfg, server) {
  const f = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '—');
  const lines = [
    `${cfg.group > 1 ? `Fleet in groups of ${cfg.group} items per attempt` : 'Fleet'}: ${cfg.tasks} no-op tasks per N, ${cfg.slots} slots a host (each holding up to ${cfg.window} attempts), hosts over ${cfg.procs} Node processes; server: ${server.shared ?? server.settings}.`,
    '',
    '| hosts | tasks/s | server CPU µs/task | client CPU µs/task | claims/task | claim p50 / p99 ms | lock waiters mean / max | exactly once |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...runs.map((r) => `| ${r.hosts} | ${f(r.rate)} | ${f(r.serverUs)} | ${f(r.clientUs)} | ${f(r.claimsPerTask, 2)} | ${f(r.p50, 1)} / ${f(r.p99, 1)} | ${f(r.locks.mean, 2)} / ${r.locks.max} | ${r.violations.length ? r.violations.join(', ') : 'yes'} |`),
  ];
  for (const r of runs) lines.push(...findings(r));
  return lines.join('\n') + '\n';
}

/** What one N showed beyond its row: the lock waits seen most, the statements that cost most. */
function findings(r) {
  const lines = [];
  if (r.locks.kinds.length) lines.push('', `${r.hosts} hosts, most seen lock waits: ${r.locks.kinds.map(([k, c]) => `${c}× ${k}`).join('; ')}`);
  if (r.top.length) lines.push('', `${r.hosts} hosts, statements by server time (calls/task, µs/task, buffer pages read per call):`, ...r.top.map((t) => `- ${t.perTask.toFixed(2)}, ${t.usPerTask.toFixed(0)} µs, ${t.pagesPerCall.toFixed(0)} pages: \`${t.query}\``));
  return lines;
}
