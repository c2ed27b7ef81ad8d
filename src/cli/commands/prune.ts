import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import bytes from 'bytes';
import { safeName } from '../../coordinator/coordinator.js';
import { parseDuration } from '../../job/units.js';
import { logRoot, openStore, resolveDbPath } from '../../store/open-store.js';
import { line, type Io, type OutputFlags } from '../io.js';

export interface PruneFlags extends OutputFlags {
  db?: string;
  olderThan?: string;
}

/**
 * `splitdance prune`: delete finished batches (nothing PENDING or RUNNING) idle for longer
 * than --older-than (default 30d), their tasks, attempts and log files.
 */
export async function pruneCommand(flags: PruneFlags, io: Io): Promise<number> {
  const age = parseDuration(flags.olderThan ?? '30d', '--older-than');
  const dbPath = resolveDbPath(flags.db, io.cwd, io.env);
  const store = await openStore(dbPath, { create: false });
  try {
    const result = await store.pruneFinished(Date.now() - age);
    let freed = 0;
    // Rows first (one transaction), files after: a crash in between leaves only orphan files.
    for (const path of result.logPaths) freed += removeFile(path);
    for (const name of result.batches) rmSync(join(logRoot(dbPath, io.cwd), safeName(name)), { recursive: true, force: true });
    const summary = { batches: result.batches, tasks: result.tasks, attempts: result.attempts, logBytesFreed: freed };
    if (flags.json) line(io.stdout, JSON.stringify(summary, null, 2));
    else if (!flags.quiet) {
      line(
        io.stderr,
        result.batches.length === 0
          ? `nothing to prune: no finished batch idle for more than ${flags.olderThan ?? '30d'}`
          : `pruned ${result.batches.length} batch(es) (${result.batches.join(', ')}): ${result.tasks} tasks, ${result.attempts} attempts, ` +
              `${bytes(freed) ?? `${freed}B`} of logs freed (the database file reuses the space)`,
      );
    }
    return 0;
  } finally {
    await store.close();
  }
}

function removeFile(path: string): number {
  try {
    const size = statSync(path).size;
    rmSync(path, { force: true });
    return size;
  } catch {
    return 0;
  }
}
