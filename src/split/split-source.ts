import { accessSync, constants, statSync } from 'node:fs';
import { UsageError } from '../errors.js';
import type { TaskSpec } from '../store/task-store.js';
import { chunkFile, type ChunkMode } from './chunk-file.js';
import { readArgGroups, type ArgGroup } from './arg-groups.js';
import { readItems, type ItemsMode } from './items.js';
import { readBlocks } from './stdin-blocks.js';
import { walkDirectory } from './walk-directory.js';

export interface SplitOptions {
  include: string[];
  exclude: string[];
  /** A file's chunks, or (a list read as `blocks`) stdin's blocks: about this many bytes, or `lines` lines. */
  chunkSize: number;
  lines: number | null;
  /** A file source: the sizes its batch chunked it at (file-growth.ts); absent for a batch stored without them. */
  sizes?: number[] | null;
  /** A list source: how it is read, and the name its items carry (`-` for stdin). */
  items?: { mode: ItemsMode; shown: string; groups?: ArgGroup[] } | null;
  /** Absolute paths the walk must not list (the store and its folder). */
  skip: string[];
  onSkip?: (path: string, reason: string) => void;
}

export type SourceKind = 'directory' | 'file' | 'items';

/** Checks the source up front so a bad one fails before anything is written; a list must be a readable file. */
export function sourceKind(source: string, items = false): SourceKind {
  let stats;
  try {
    stats = statSync(source);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new UsageError(`source ${source} does not exist; give a directory or a file to split`);
    throw new UsageError(`cannot read the source ${source} (${code}); check the path and its permissions`);
  }
  if (items && stats.isDirectory()) throw new UsageError(`--items ${source} is a directory; give a list file (one item per line), or run the directory itself without --items`);
  if (!stats.isDirectory() && !stats.isFile()) {
    throw new UsageError(`source ${source} is neither a directory nor a regular file${items ? '' : '; a list on stdin is `run -`, from a command `--items <(cmd)`'}`);
  }
  try {
    accessSync(source, constants.R_OK | (stats.isDirectory() ? constants.X_OK : 0));
  } catch {
    throw new UsageError(`cannot read the source ${source}; fix its permissions`);
  }
  return items ? 'items' : stats.isDirectory() ? 'directory' : 'file';
}

/** The Splitter: a source becomes a stream of task specs with stable keys. */
export function splitSource(source: string, kind: SourceKind, options: SplitOptions): Generator<TaskSpec> {
  if (kind === 'directory') return walkDirectory(source, options);
  if (kind === 'items' && options.items!.groups) return readArgGroups(options.items!.groups, options.items!.mode);
  const mode: ChunkMode = options.lines ? { kind: 'lines', lines: options.lines } : { kind: 'bytes', chunkSize: options.chunkSize };
  if (kind === 'items') return options.items!.mode.format === 'blocks' ? readBlocks(source, mode) : readItems(source, options.items!.shown, options.items!.mode);
  return chunkFile(source, mode, options.sizes ?? undefined);
}

/** Pulls the first spec so an empty source is reported before the store is touched. */
export function nonEmpty(specs: Iterable<TaskSpec>, source: string, kind: SourceKind): Iterable<TaskSpec> {
  const it = specs[Symbol.iterator]();
  const first = it.next();
  if (first.done) {
    throw new UsageError(
      kind === 'directory'
        ? `source ${source} holds no files to run (after --include/--exclude, --sample and skipping hidden files)`
        : kind === 'items'
          ? `${source === '-' ? 'stdin' : `the list ${source}`} holds no items (empty lines are skipped); give it one item per line`
          : `source ${source} is empty; there is nothing to split`,
    );
  }
  return (function* () {
    yield first.value;
    for (let r = it.next(); !r.done; r = it.next()) yield r.value;
  })();
}
