import picomatch from 'picomatch';
import { UsageError } from '../../errors.js';
import { requireFilter } from '../filters.js';
import { parseConcurrency } from '../../job/run-options.js';
import type { AdminStore, BatchRecord } from '../../store/task-store.js';
import { printable } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { resolveBatch } from '../resolve-batch.js';
import { withBatch } from '../with-store.js';
import { clusterId, errorSignature } from '../../status/error-signature.js';
import { runCommand } from './run.js';
import { openStore, resolveDbPath } from '../../store/open-store.js';

export interface RetryFailedFlags extends OutputFlags {
  db?: string;
  batch?: string;
  key?: string;
  error?: string;
  cluster?: string;
  run?: boolean;
  concurrency?: string;
  print?: boolean;
  tag?: boolean;
  keepOrder?: boolean;
}

/**
 * `splitdance retry-failed`: FAILED tasks back to PENDING with a fresh budget; `--run` runs
 * the batch with its stored definition (never a job file that happens to be in the current
 * folder). Every flag is checked, and with --run the handler loaded, before a task is reset.
 */
export async function retryFailedCommand(flags: RetryFailedFlags, io: Io): Promise<number> {
  requireFilter(flags.key, '--key');
  requireFilter(flags.error, '--error');
  requireFilter(flags.cluster, '--cluster');
  if (flags.concurrency !== undefined) parseConcurrency(flags.concurrency);
  if (!flags.run && (flags.print || flags.tag || flags.keepOrder)) throw new UsageError('--print, --tag and --keep-order go with --run');
  if (!flags.run) {
    const { name, reset } = await withBatch(flags, io, async (store, batch) => ({ name: batch.name, reset: await resetFailed(store, batch, flags) }));
    if (flags.json) line(io.stdout, JSON.stringify({ batch: name, reset }));
    else if (!flags.quiet) line(io.stderr, `batch ${printable(name)}: ${reset} failed task${reset === 1 ? '' : 's'} reset to PENDING`);
    return 0;
  }
  const dbPath = resolveDbPath(flags.db, io.cwd, io.env);
  const store = await openStore(dbPath, { create: false });
  let batch: BatchRecord;
  try {
    batch = await resolveBatch(store, flags.batch);
  } finally {
    await store.close();
  }
  const { db, json, quiet, verbose, color, concurrency, print, tag, keepOrder } = flags;
  return runCommand(batch.source, { db, batch: batch.name, json, quiet, verbose, color, concurrency, print, tag, keepOrder }, io, {
    storedOnly: true,
    beforeWrite: async (writable) => {
      const current = await writable.findBatch(batch.name);
      const reset = current ? await resetFailed(writable, current, flags) : 0;
      if (!quiet && !json) line(io.stderr, `batch ${printable(batch.name)}: ${reset} failed task${reset === 1 ? '' : 's'} reset to PENDING`);
    },
  });
}

function resetFailed(store: AdminStore, batch: BatchRecord, flags: RetryFailedFlags): Promise<number> {
  return store.retryFailed({
    batchId: batch.id,
    keyMatches: flags.key !== undefined ? picomatch(flags.key, { dot: true }) : undefined,
    errorContains: flags.error,
    errorMatches: flags.cluster !== undefined ? (e) => e !== null && clusterId(errorSignature(e)) === flags.cluster!.trim().toLowerCase() : undefined,
  });
}
