// One Node process of the fleet: several simulated hosts, one worker thread each (a host's
// identity is per module instance, so hosts never share an owner). Speaks to bench/fleet-row.mjs
// in lines: it prints `ready` once every host has opened its store (a few at a time), runs them on `go`, prints
// their reports as one JSON line once all are done, and closes them on `close`.
import { Worker } from 'node:worker_threads';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const config = JSON.parse(process.argv[2]);
const HOST = fileURLToPath(new URL('./fleet-host.mjs', import.meta.url));
const first = (w) => new Promise((resolve, reject) => w.once('message', resolve).once('error', reject));
// A few at a time: 128 sessions opened at once on a loaded machine outlast the connect timeout.
const OPENING = 4;
const hosts = [];
for (let i = 0; i < config.hosts.length; i += OPENING) {
  const some = config.hosts.slice(i, i + OPENING).map((id) => new Worker(HOST, { workerData: { ...config, id }, env: { ...process.env, SPLITDANCE_HOST_ID: id }, stdout: false }));
  hosts.push(...some);
  await Promise.all(some.map(first));
}
const lines = createInterface({ input: process.stdin });
const next = () => new Promise((resolve) => lines.once('line', resolve));

console.log('ready');
await next();
const reports = hosts.map(first);
for (const w of hosts) w.postMessage('go');
console.log(JSON.stringify(await Promise.all(reports)));
await next();
await Promise.all(hosts.map((w) => new Promise((resolve) => (w.once('exit', resolve), w.postMessage('close')))));
process.exit(0);
