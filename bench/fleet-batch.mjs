// A fleet's batch: its own schema on the fleet's server, enqueued by the CLI.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, ROOT, fail, work } from './measure.mjs';

const NOOP = join(ROOT, 'fixtures/handlers/ok.mjs');

/** The `--db` URL of `schema` on the server at `url`. */
export function schemaUrl(url, schema) {
  return `${url}${url.includes('?') ? '&' : '?'}schema=${schema}`;
}

/**
 * Batch B of `tasks` one-line tasks with a no-op handler, in `schema`: enqueued by the CLI (exit
 * 3 at the 1 ms limit, maybe with a few tasks done), for the fleet to run the rest. Its `--db`.
 */
export function enqueueFleetBatch(url, schema, tasks) {
  const db = schemaUrl(url, schema);
  const file = join(work, `${schema}.txt`);
  writeFileSync(file, 'x\n'.repeat(tasks));
  const enq = spawnSync(process.execPath, [BIN, 'run', file, '--db', db, '--batch', 'B', '--lines', '1', '--handler', NOOP, '-j', '1', '--max-runtime', '1ms', '--quiet'], { cwd: work, encoding: 'utf8' });
  if (enq.status !== 3 && enq.status !== 0) fail(`enqueuing exited ${enq.status}: ${enq.stderr.trim()}`);
  return db;
}
