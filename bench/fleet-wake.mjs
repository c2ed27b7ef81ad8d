// The other way to wake idle hosts (docs/postgres-fleet.md): LISTEN/NOTIFY. splitdance does not
// use it; this measures what it would cost, beside the backed-off poll the idle hosts use: a
// session per host waiting in LISTEN (what it costs the server while nothing happens), and each
// notification, which the server delivers to every listening session.
import pg from 'pg';
import { serverCpuUs } from './fleet-server.mjs';

const CHANNEL = 'splitdance_fleet_wake';
const NOTIFIES = 200;
const QUIET_MS = 3000;

/** L listening sessions: server CPU per listener-second while quiet, and per notification (server and the listeners' client side). */
export async function notifyCost(server, listeners, quietMs = QUIET_MS) {
  const pm = server.postmaster();
  if (!pm) return null; // a shared server's CPU is not the fleet's alone
  const clients = [];
  const got = new Array(listeners).fill(0);
  try {
    for (let i = 0; i < listeners; i++) {
      const c = new pg.Client({ connectionString: server.url });
      await c.connect();
      c.on('notification', () => got[i]++);
      await c.query(`LISTEN ${CHANNEL}`);
      clients.push(c);
    }
    const notifier = new pg.Client({ connectionString: server.url });
    await notifier.connect();
    clients.push(notifier);
    let before = serverCpuUs(pm);
    await new Promise((r) => setTimeout(r, quietMs));
    const quiet = (serverCpuUs(pm) - before) / (listeners * (quietMs / 1000));
    before = serverCpuUs(pm);
    const client0 = process.cpuUsage();
    for (let i = 0; i < NOTIFIES; i++) await notifier.query('SELECT pg_notify($1, $2)', [CHANNEL, String(i)]);
    const deadline = Date.now() + 60_000;
    while (got.some((n) => n < NOTIFIES) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    const server1 = serverCpuUs(pm);
    const client = process.cpuUsage(client0);
    return {
      listeners,
      quietMs,
      quietUsPerListenerSecond: quiet,
      serverUsPerNotify: (server1 - before) / NOTIFIES,
      clientUsPerNotify: (client.user + client.system) / NOTIFIES,
      delivered: got.every((n) => n === NOTIFIES),
    };
  } finally {
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  }
}

export function wakeTable(runs) {
  const f = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '—');
  return [
    `LISTEN/NOTIFY, for comparison (not used by splitdance): L sessions in LISTEN, quiet for ${runs[0].quietMs / 1000} s, then ${NOTIFIES} notifications one after another, each delivered to all L.`,
    '',
    '| listeners | server CPU µs per listener-second, quiet | server CPU µs per notification | listeners\' client CPU µs per notification | all delivered |',
    '| --- | --- | --- | --- | --- |',
    ...runs.map((r) => `| ${r.listeners} | ${f(r.quietUsPerListenerSecond)} | ${f(r.serverUsPerNotify)} | ${f(r.clientUsPerNotify)} | ${r.delivered ? 'yes' : 'no'} |`),
  ].join('\n');
}
