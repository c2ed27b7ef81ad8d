import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { PgDb } from '../../src/store/postgres/pg-db.js';
import { parsePgUrl } from '../../src/store/postgres/pg-target.js';
import { PG_URL, pgQuery } from '../helpers/pg.js';

/**
 * A connection the server ends in the same TCP read as the end of its start-up. The driver
 * parses both messages in one go: ReadyForQuery hands the new connection from the pool to
 * its caller (the pool takes its own error listener off it), and the server's "terminating
 * connection" arrives before the caller can listen. With no listener on the connection, that
 * error event was thrown from the socket's handler: the process died with exit 70 ("unexpected
 * error: terminating connection due to administrator command") where a restart of the server
 * is an outage to wait out. Seen in the fault campaign's loop that kills a run's sessions.
 *
 * A real server, and a proxy in front of it that holds the start-up's answer until the test has
 * terminated that backend, then passes both on in one write.
 */
interface Coalescing {
  port: number;
  /** The backend pid of the first connection, once its start-up is complete (and held). */
  backend: Promise<number>;
  close(): void;
}

/** Server messages: a type byte, then an int32 length that counts itself. */
function* messages(buf: Buffer): Generator<{ type: string; body: Buffer; end: number }> {
  let at = 0;
  while (at + 5 <= buf.length) {
    const len = buf.readInt32BE(at + 1);
    if (at + 1 + len > buf.length) return;
    yield { type: String.fromCharCode(buf[at]!), body: buf.subarray(at + 5, at + 1 + len), end: at + 1 + len };
    at += 1 + len;
  }
}

async function coalescingProxy(target: URL): Promise<Coalescing> {
  const sockets = new Set<Socket>();
  let first = true;
  let found!: (pid: number) => void;
  const backend = new Promise<number>((resolve) => (found = resolve));
  const server = createServer((client) => {
    const hold = first;
    first = false;
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
    }
    client.on('data', (b) => upstream.write(b));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    // Everything before ReadyForQuery (authentication, parameters, the backend's pid) passes;
    // ReadyForQuery is held until more arrives (the termination), then both go in one write.
    let pending: Buffer | null = hold ? Buffer.alloc(0) : null;
    let held: Buffer | null = null;
    let pid = 0;
    upstream.on('data', (b: Buffer) => {
      if (held) {
        client.write(Buffer.concat([held, b]));
        held = null;
        return;
      }
      if (!pending) return void client.write(b);
      pending = Buffer.concat([pending, b]);
      let passed = 0;
      for (const m of messages(pending)) {
        if (m.type === 'K') pid = m.body.readInt32BE(0);
        if (m.type === 'Z') {
          held = pending.subarray(passed);
          break;
        }
        passed = m.end;
      }
      client.write(pending.subarray(0, passed));
      pending = held ? null : pending.subarray(passed);
      if (held) found(pid);
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    port: (server.address() as AddressInfo).port,
    backend,
    close: () => {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}

let proxy: Coalescing | undefined;
afterEach(() => proxy?.close());

describe.skipIf(!PG_URL)('a connection ended by the server as the pool hands it over', () => {
  it('fails the statement as an outage (UNAVAILABLE), never as an error thrown from the socket', async () => {
    const url = new URL(PG_URL!);
    proxy = await coalescingProxy(new URL(PG_URL!));
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    const db = new PgDb(parsePgUrl(url.href), false);
    const escaped: unknown[] = [];
    const onUncaught = (err: unknown) => escaped.push(err);
    process.prependListener('uncaughtException', onUncaught);
    try {
      const read = db.read((sql) => sql.rows('SELECT 1')).then(
        () => 'answered',
        (err: unknown) => err,
      );
      const pid = await proxy.backend;
      await pgQuery('SELECT pg_terminate_backend($1)', [pid]);
      expect(await read).toMatchObject({ name: 'StoreError', code: 'UNAVAILABLE', message: expect.stringMatching(/lost the connection|cannot serve/) });
      expect(escaped).toEqual([]);
    } finally {
      process.removeListener('uncaughtException', onUncaught);
      await db.close();
    }
  });
});
