import picomatch from 'picomatch';
import { line, type Io, type OutputFlags } from '../io.js';
import { withBatch } from '../with-store.js';
import { clusterId, errorSignature } from '../error-signature.js';
import { runCommand } from './run.js';

export interface RetryFailedFlags extends OutputFlags {
  db?: string;
  batch?: string;
  key?: string;
  error?: string;
  cluster?: string;
  run?: boolean;
  concurrency?: string;
}

/** `splitdance retry-failed`: FAILED tasks back to PENDING with a fresh budget; `--run` runs the batch. */
export async function retryFailedCommand(flags: RetryFailedFlags, io: Io): Promise<number> {
  const { name, source, reset } = await withBatch(flags, io, async (store, batch) => ({
    name: batch.name,
    source: batch.source,
    reset: await store.retryFailed({
      batchId: batch.id,
      keyMatches: flags.key ? picomatch(flags.key, { dot: true }) : undefined,
      errorContains: flags.error,
      errorMatches: flags.cluster ? (e) => e !== null && clusterId(errorSignature(e)) === flags.cluster!.toLowerCase() : undefined,
    }),
  }));
  if (flags.json && !flags.run) line(io.stdout, JSON.stringify({ batch: name, reset }));
  else if (!flags.quiet) line(io.stderr, `batch ${name}: ${reset} failed task${reset === 1 ? '' : 's'} reset to PENDING`);
  if (!flags.run) return 0;
  const { db, json, quiet, verbose, color, concurrency } = flags;
  return runCommand(source, { db, batch: name, json, quiet, verbose, color, concurrency }, io);
}
