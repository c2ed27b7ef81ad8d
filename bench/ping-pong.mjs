// The handler benchmark's baseline: `node bench/ping-pong.mjs TASKS WORKERS` forks WORKERS
// echo children (this same file) and keeps one message in flight per child until TASKS round
// trips are done: the bare IPC that a pool of Node workers cannot beat without batching.
// The children exit when their channel closes and this process waits for them, so the bench
// counts their CPU.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

if (process.argv[2] === '--echo') {
  process.on('message', (m) => process.send(m));
  process.on('disconnect', () => process.exit(0));
} else {
  const total = Number(process.argv[2]);
  const workers = Number(process.argv[3]);
  if (!(total > 0 && workers > 0)) {
    console.error('usage: node bench/ping-pong.mjs TASKS WORKERS');
    process.exit(2);
  }
  let sent = 0;
  let got = 0;
  const kids = Array.from({ length: Math.min(workers, total) }, () => fork(fileURLToPath(import.meta.url), ['--echo']));
  for (const k of kids) {
    k.on('message', () => {
      if (++got === total) kids.forEach((c) => c.disconnect());
      else if (sent < total) k.send({ type: 'run', token: ++sent });
    });
    k.send({ type: 'run', token: ++sent });
  }
}
