import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy in front of a server, for partitions: `freeze()` makes it a half-open
 * network, every socket (old and new) kept open and nothing more forwarded either way.
 * `fromServer()` is how many bytes it has passed from the server to its clients so far.
 */
export interface Proxy {
  port: number;
  freeze(): void;
  fromServer(): number;
  close(): void;
}

export async function startProxy(target: URL): Promise<Proxy> {
  let frozen = false;
  let fromServer = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('error', () => {});
    if (frozen) return; // accepted, and never answered
    const upstream = connect(Number(target.port || 5432), target.hostname);
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('data', (b) => frozen || upstream.write(b));
    upstream.on('data', (b) => {
      if (frozen) return;
      fromServer += b.length;
      client.write(b);
    });
    // Until the freeze, a close on either side is passed on; after it, nothing is.
    client.on('close', () => frozen || upstream.destroy());
    upstream.on('close', () => frozen || client.destroy());
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    port: (server.address() as AddressInfo).port,
    freeze: () => (frozen = true),
    fromServer: () => fromServer,
    close: () => {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}
