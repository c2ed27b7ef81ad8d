// A loopback HTTP service for the adaptive row (BENCH.md): it serves each request in HOLD_MS
// and answers 503 (busy) at once to any request that would make more than LIMIT accepted in the
// last second. Started as its own process (the bench measures with spawnSync): it writes its
// port to argv[2] once it listens, and on SIGTERM the times of its answers to argv[3].
import { createServer } from 'node:http';
import { writeFileSync } from 'node:fs';

const [portFile, statsFile, limit = '20', hold = '150'] = process.argv.slice(2);
const LIMIT = Number(limit);
const HOLD_MS = Number(hold);
const start = performance.now();
const accepted = [];
const ok = [];
const busy = [];

const server = createServer((_req, res) => {
  const now = performance.now() - start;
  let recent = 0;
  for (let i = accepted.length - 1; i >= 0 && accepted[i] > now - 1000; i--) recent++;
  if (recent >= LIMIT) {
    busy.push(now);
    res.writeHead(503).end('busy');
    return;
  }
  accepted.push(now);
  setTimeout(() => {
    ok.push(performance.now() - start);
    res.writeHead(200).end('ok');
  }, HOLD_MS);
});
server.listen(0, '127.0.0.1', () => writeFileSync(portFile, String(server.address().port)));
process.on('SIGTERM', () => {
  writeFileSync(statsFile, JSON.stringify({ ok, busy }));
  process.exit(0);
});
