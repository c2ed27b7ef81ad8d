// The fleet's PostgreSQL: a throwaway cluster of its own when this machine can make one (root and
// the server binaries), so that every postgres process is the fleet's (its CPU is the fleet's
// alone), max_connections fits 128 hosts × the store's pool, and pg_stat_statements can be
// preloaded. Otherwise SPLITDANCE_PG_URL, shared: server CPU then counts whatever else it serves.
import { execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BIN_DIR = process.env.SPLITDANCE_PG_BIN ?? '/usr/lib/postgresql/15/bin';

function privateUnavailable() {
  if (process.getuid?.() !== 0) return 'not root';
  if (!existsSync(join(BIN_DIR, 'initdb'))) return `no initdb in ${BIN_DIR}`;
  try {
    execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
    return null;
  } catch {
    return 'no postgres user';
  }
}

const asPostgres = (cmd, args) => execFileSync('runuser', ['-u', 'postgres', '--', join(BIN_DIR, cmd), ...args], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 120_000 });

/**
 * { url, postmaster(): pid | null, settings, stop() } — `postmaster` is null on a shared server.
 * `serverCpu`: the private cluster's processes are pinned to that CPU (null: not pinned).
 */
export function fleetServer(maxConnections, serverCpu = null) {
  const why = privateUnavailable();
  if (why && serverCpu !== null) return null; // only a cluster of our own can be pinned
  if (why) {
    const url = process.env.SPLITDANCE_PG_URL;
    if (!url) return null;
    return { url, shared: `SPLITDANCE_PG_URL (shared; a private cluster needs root and initdb: ${why})`, postmaster: () => null, stop() {} };
  }
  const dir = mkdtempSync(join(tmpdir(), 'sd-fleet-pg-'));
  chmodSync(dir, 0o700);
  chownSync(dir, Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })));
  const data = join(dir, 'data');
  asPostgres('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  appendFileSync(join(data, 'pg_hba.conf'), 'host all all 127.0.0.1/32 trust\n');
  const port = 20000 + (process.pid % 20000);
  // Default settings but the connection limit (and the statistics): what a user's server runs with.
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=${maxConnections} -c shared_preload_libraries=pg_stat_statements`;
  // The postmaster and every backend it forks inherit the CPU affinity of pg_ctl.
  const pinned = serverCpu === null ? [] : ['taskset', '-c', String(serverCpu)];
  execFileSync('runuser', ['-u', 'postgres', '--', ...pinned, join(BIN_DIR, 'pg_ctl'), '-D', data, '-w', '-t', '60', '-o', opts, '-l', join(dir, 'log'), 'start'], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 120_000 });
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    shared: null,
    settings: `private cluster, PostgreSQL defaults (fsync on, shared_buffers 128MB) but max_connections=${maxConnections}, TCP loopback${serverCpu === null ? '' : `; the server pinned to CPU ${serverCpu}, the fleet's processes to the others`}`,
    postmaster: () => Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]),
    stop() {
      try {
        asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** utime+stime (+ reaped children's) of a process, in µs; 0 once it is gone. */
export function cpuUs(pid, withChildren = false) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const x = f.slice(f.lastIndexOf(')') + 2).split(' ').map(Number);
    const ticks = x[11] + x[12] + (withChildren ? x[13] + x[14] : 0);
    return (ticks * 1e6) / 100; // USER_HZ is 100 on Linux
  } catch {
    return 0;
  }
}

/** The postmaster and every server process under it: their CPU so far, exited backends included (reaped into the postmaster's children times). */
export function serverCpuUs(postmaster) {
  const kids = (() => {
    try {
      return readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      return [];
    }
  })();
  return cpuUs(postmaster, true) + kids.reduce((s, k) => s + cpuUs(k), 0);
}
