import bytes from 'bytes';
import { MAX_AGE, parseDuration } from '../../job/units.js';
import { batchLogFolder, removeBatchLogs } from '../../store/log-layout.js';
import { logRoot, openStore, resolveDbPath } from '../../store/open-store.js';
import { printable } from '../format.js';
import { line, type Io, type OutputFlags } from '../io.js';

export interface PruneFlags extends OutputFlags {
  db?: string;
  olderThan?: string;
}

/**
 * `splitdance prune`: delete finished batches (nothing PENDING or RUNNING) idle for longer
 * than --older-than (default 30d), their tasks, attempts and log files. Only files it can
 * prove are those batches' own logs are deleted (log-layout.ts): never a computed folder
 * recursively, whatever a batch is called.
 */
export async function pruneCommand(flags: PruneFlags, io: Io): Promise<number> {
  const age = parseDuration(flags.olderThan ?? '30d', '--older-than', MAX_AGE);
  const dbPath = resolveDbPath(flags.db, io.cwd, io.env);
  const store = await openStore(dbPath, { create: false });
  try {
    const root = logRoot(dbPath, io.cwd);
    let freed = 0;
    // Rows are deleted in chunks, each its own short transaction; a chunk's log files go as soon
    // as its rows are committed. A prune killed in between leaves only that chunk's files behind
    // (never a row whose file it deleted first), and running it again finishes the rest.
    const result = await store.pruneFinished(Date.now() - age, (name, paths) => {
      const folder = batchLogFolder(root, store.identity, name);
      freed += removeBatchLogs(folder, paths); // only files provably this batch's own (log-layout.ts)
    });
    // Each pruned batch's folder goes too, once nothing else is in it.
    for (const name of result.batches) freed += removeBatchLogs(batchLogFolder(root, store.identity, name), []);
    const summary = { batches: result.batches, tasks: result.tasks, attempts: result.attempts, logBytesFreed: freed };
    if (flags.json) line(io.stdout, JSON.stringify(summary, null, 2));
    else if (!flags.quiet) {
      line(
        io.stderr,
        result.batches.length === 0
          ? `nothing to prune: no finished batch idle for more than ${flags.olderThan ?? '30d'}`
          : `pruned ${result.batches.length} batch(es) (${result.batches.map((b) => printable(b)).join(', ')}): ${result.tasks} tasks, ${result.attempts} attempts, ` +
              `${bytes(freed) ?? `${freed}B`} of logs freed (the database file reuses the space)`,
      );
    }
    return 0;
  } finally {
    await store.close();
  }
}
