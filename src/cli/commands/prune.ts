import { UsageError } from '../../errors.js';
import { MAX_AGE, parseDuration } from '../../job/units.js';
import { batchLogBytes, batchLogFolder, foldersOfGoneBatches, removeBatchLogs } from '../../store/log-layout.js';
import { logRoot, openStore, resolveDbPath, trustedOwners } from '../../store/open-store.js';
import type { BatchRecord, TaskStore } from '../../store/task-store.js';
import { printable, size } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';
import { resolveBatch } from '../resolve-batch.js';
import { commandLineFor, givenDb } from '../suggested-commands.js';

export interface PruneFlags extends OutputFlags {
  db?: string;
  trustStoreOwner?: string[];
  olderThan?: string;
  batch?: string;
  dryRun?: boolean;
}

/** What a prune deleted, or with --dry-run would delete: `prune --json` prints it as one line. */
interface PruneSummary {
  dryRun: boolean;
  batches: string[];
  tasks: number;
  attempts: number;
  logBytes: number;
}

/**
 * `splitdance prune`: delete finished batches (nothing PENDING or RUNNING) idle for longer
 * than --older-than (default 30d), or the one finished batch --batch names whatever its age,
 * with their tasks, attempts and log files. --dry-run reads only and says what would go.
 * Only files it can prove are those batches' own logs are deleted (log-layout.ts): never a
 * computed folder recursively, whatever a batch is called.
 */
export async function pruneCommand(flags: PruneFlags, io: Io): Promise<number> {
  if (flags.batch !== undefined && flags.olderThan !== undefined) {
    throw new UsageError('--batch prunes that batch whatever its age: give --batch or --older-than, not both');
  }
  const before = flags.batch !== undefined ? Number.MAX_SAFE_INTEGER : Date.now() - parseDuration(flags.olderThan ?? '30d', '--older-than', MAX_AGE);
  const dbPath = resolveDbPath(flags.db, io.cwd, io.env);
  const store = flags.dryRun ? await openStore(dbPath, 'read') : await openStore(dbPath, 'write', { trust: trustedOwners(flags.trustStoreOwner) });
  try {
    const root = logRoot(dbPath, io.cwd);
    const only = flags.batch === undefined ? undefined : await finishedBatch(store, flags, io);
    const summary = flags.dryRun ? await plan(store, root, before, only) : await prune(store, root, before, only);
    if (flags.json) line(io.stdout, JSON.stringify(summary));
    else if (!flags.quiet) line(io.stderr, describe(summary, flags));
    return 0;
  } finally {
    await store.close();
  }
}

/** The batch --batch names, refused (exit 2, nothing deleted) unless it is finished. */
async function finishedBatch(store: TaskStore, flags: PruneFlags, io: Io): Promise<BatchRecord> {
  const batch = await resolveBatch(store, flags.batch, givenDb(flags.db, io));
  const c = await store.counts(batch.id);
  const open = c.pending + c.retrying + c.running + c.queued;
  if (open > 0) {
    const target = { batch: batch.name, db: givenDb(flags.db, io) };
    throw new UsageError(
      `batch "${printable(batch.name)}" is not finished (${open} of ${c.total} tasks pending, retrying or running): nothing pruned; ` +
        `\`${commandLineFor(target, ['cancel'])}\` ends its unfinished tasks, then prune it`,
    );
  }
  return batch;
}

async function prune(store: TaskStore, root: string, before: number, only: BatchRecord | undefined): Promise<PruneSummary> {
  let freed = 0;
  const began = Date.now();
  // Rows are deleted in chunks, each its own short transaction; a chunk's log files go as soon
  // as its rows are committed. A prune killed in between leaves only that chunk's files behind
  // (never a row whose file it deleted first), and running it again finishes the rest.
  const result = await store.pruneFinished(
    before,
    (name, paths) => {
      freed += removeBatchLogs(batchLogFolder(root, store.identity, name), paths); // only files provably this batch's own (log-layout.ts)
    },
    only?.id,
  );
  // Each pruned batch's segments (every attempt of it gone now) and its folder go too, once
  // nothing else is in it; a segment written since the prune began is a new batch's of that name.
  for (const name of result.batches) freed += removeBatchLogs(batchLogFolder(root, store.identity, name), [], began);
  // And those of batches an earlier prune removed but was killed before it got to them.
  const live = (await store.listBatches()).map((b) => b.name);
  for (const folder of foldersOfGoneBatches(root, store.identity, live)) freed += removeBatchLogs(folder, [], began);
  return { dryRun: false, batches: result.batches, tasks: result.tasks, attempts: result.attempts, logBytes: freed };
}

/** --dry-run: the same choice of batches, from reads only. */
async function plan(store: TaskStore, root: string, before: number, only: BatchRecord | undefined): Promise<PruneSummary> {
  const summary: PruneSummary = { dryRun: true, batches: [], tasks: 0, attempts: 0, logBytes: 0 };
  for (const b of await store.prunableBatches(before, only?.id)) {
    summary.batches.push(b.name);
    summary.tasks += (await store.counts(b.id)).total;
    summary.attempts += (await store.batchAttempts(b.id, 0)).total;
    summary.logBytes += batchLogBytes(batchLogFolder(root, store.identity, b.name));
  }
  return summary;
}

function describe(s: PruneSummary, flags: PruneFlags): string {
  if (s.batches.length === 0) {
    return flags.batch !== undefined ? 'nothing to prune' : `nothing to prune: no finished batch idle for more than ${flags.olderThan ?? '30d'}`;
  }
  const what = `${s.batches.length} batch${s.batches.length === 1 ? '' : 'es'} (${s.batches.map((b) => printable(b)).join(', ')}): ${s.tasks} tasks, ${s.attempts} attempts, ${size(s.logBytes)} of logs`;
  return s.dryRun ? `would prune ${what} (dry run: nothing deleted)` : `pruned ${what} freed (the database file reuses the space)`;
}
