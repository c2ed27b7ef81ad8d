import { UsageError } from '../../errors.js';
import { keyMatcher, requireFilter } from '../filters.js';
import { inputFromFlags, type RawRunFlags } from '../../job/run-options.js';
import { parseConcurrency } from '../../job/option-checks.js';
import { planRun } from '../../job/plan-run.js';
import { startAndDrive } from '../drive-run.js';
import { keepWorkingWithoutOutput } from '../lost-output.js';
import type { AdminStore, BatchRecord, QueryStore, TaskStore } from '../../store/task-store.js';
import { printable } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { resolveBatch } from '../resolve-batch.js';
import { withBatch } from '../with-store.js';
import { clusterId, errorSignature } from '../../status/error-signature.js';
import { openStore, peekBatch, resolveDbPath, trustedOwners } from '../../store/open-store.js';

export interface RetryFailedFlags extends OutputFlags {
  db?: string;
  trustStoreOwner?: string[];
  batch?: string;
  key?: string;
  error?: string;
  cluster?: string;
  run?: boolean;
  concurrency?: string;
  print?: boolean;
  tag?: boolean;
  keepOrder?: boolean;
  results?: string;
  lineBuffer?: boolean;
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
  // Without --run, -j has nothing to size; it is still checked, as a typo should not pass silently.
  if (!flags.run && flags.concurrency !== undefined) parseConcurrency(flags.concurrency);
  if (!flags.run && (flags.print || flags.tag || flags.keepOrder || flags.lineBuffer || flags.results !== undefined)) throw new UsageError('--print, --tag, --keep-order, --line-buffer and --results go with --run');
  if (!flags.run) {
    const { name, reset } = await withBatch(flags, io, async (store, batch) => ({ name: batch.name, reset: await resetFailed(store, batch, flags) }));
    if (flags.json) line(io.stdout, JSON.stringify({ batch: name, reset }));
    else if (!flags.quiet) line(io.stderr, `batch ${printable(name)}: ${reset} failed task${reset === 1 ? '' : 's'} reset to PENDING`);
    return 0;
  }
  // Flags → plan → start → report → drive, as `run` does, with the batch's stored definition
  // (never a job file that happens to be in the current folder); -j is parsed once, by the plan.
  const { db, trustStoreOwner, json, quiet, verbose, color, concurrency, print, tag, keepOrder, lineBuffer, results } = flags;
  const runFlags: RawRunFlags = { db, trustStoreOwner, json, quiet, verbose, color, concurrency, print, tag, keepOrder, lineBuffer, results };
  const trust = trustedOwners(trustStoreOwner);
  const input = inputFromFlags(runFlags, io.cwd); // every flag checked before a store is opened
  const dbPath = resolveDbPath(flags.db, io.cwd, io.env);
  const store = await openStore(dbPath, 'write', { trust });
  let batch: BatchRecord;
  try {
    batch = await resolveBatch(store, flags.batch);
  } finally {
    await store.close();
  }
  keepWorkingWithoutOutput(); // a closed or full stdout must not end a batch half-run
  runFlags.batch = batch.name;
  const plan = await planRun(batch.source, runFlags, io.cwd, (name) => peekBatch(dbPath, name, trust), dbPath, { storedOnly: true, input: { ...input, batch: batch.name } });
  const beforeWrite = async (writable: TaskStore) => {
    const current = await writable.findBatch(batch.name);
    const reset = current ? await resetFailed(writable, current, flags) : 0;
    if (!quiet && !json) line(io.stderr, `batch ${printable(batch.name)}: ${reset} failed task${reset === 1 ? '' : 's'} reset to PENDING`);
  };
  return startAndDrive(plan, runFlags, io, { beforeWrite });
}

async function resetFailed(store: AdminStore & QueryStore, batch: BatchRecord, flags: RetryFailedFlags): Promise<number> {
  return store.retryFailed({
    batchId: batch.id,
    keyMatches: await keyMatcher(store, batch.id, flags.key),
    errorContains: flags.error,
    errorMatches: flags.cluster !== undefined ? (e) => e !== null && clusterId(errorSignature(e)) === flags.cluster!.trim().toLowerCase() : undefined,
  });
}
