import { execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A throwaway PostgreSQL cluster of the test's own, on a free port, that a test may stop and
 * restart at will (the shared test server must never be). Needs root (the cluster runs as the
 * `postgres` user) and the server binaries.
 */

const BIN_DIR = process.env.SPLITDANCE_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** Why a private cluster cannot be made here, or null if it can. */
export function privatePgUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'needs root to run a private PostgreSQL cluster as the postgres user';
  if (!existsSync(join(BIN_DIR, 'initdb'))) return `initdb is missing (looked in ${BIN_DIR}; set SPLITDANCE_PG_BIN)`;
  try {
    execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
  } catch {
    return 'there is no postgres user to run a private cluster as';
  }
  return null;
}

export interface PrivatePg {
  /** `postgres://…` of the cluster's `postgres` database (trust auth on 127.0.0.1). */
  url: string;
  port: number;
  /** `pg_ctl restart -m fast`: every session is cut, the server is back once this returns. */
  restart(): void;
  /** `pg_ctl stop -m fast`. */
  stop(): void;
  start(): void;
  /** Stops the cluster (if running) and removes its files. */
  destroy(): void;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

const asPostgres = (cmd: string, args: string[], env?: NodeJS.ProcessEnv) =>
  execFileSync('runuser', ['-u', 'postgres', '--', join(BIN_DIR, cmd), ...args], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000, env: { ...process.env, ...env } });

/** `env`: added to the server's environment (e.g. libfaketime's, to step the server's own clock). */
export async function startPrivatePg(options: { env?: NodeJS.ProcessEnv } = {}): Promise<PrivatePg> {
  const dir = mkdtempSync(join(tmpdir(), 'sd-pgc-'));
  chmodSync(dir, 0o700);
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
  chownSync(dir, uid, gid);
  const data = join(dir, 'data');
  const port = await freePort();
  asPostgres('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  appendFileSync(join(data, 'pg_hba.conf'), 'host all all 127.0.0.1/32 trust\n');
  // Quick to start and stop; durability is not what these tests look at.
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`;
  const ctl = (...args: string[]) => asPostgres('pg_ctl', ['-D', data, '-w', '-t', '60', ...args], options.env);
  const start = () => ctl('-o', opts, '-l', join(dir, 'log'), 'start');
  start();
  let gone = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    restart: () => ctl('-m', 'fast', '-o', opts, '-l', join(dir, 'log'), 'restart'),
    stop: () => ctl('-m', 'fast', 'stop'),
    start,
    destroy() {
      if (gone) return;
      gone = true;
      try {
        ctl('-m', 'immediate', 'stop');
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
