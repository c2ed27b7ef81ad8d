import { readdirSync, realpathSync, statSync, type Dirent, type Stats } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';
import { UsageError } from '../errors.js';
import type { TaskSpec } from '../store/task-store.js';
import { globMatcher } from './globs.js';

export interface WalkOptions {
  include: string[];
  exclude: string[];
  /** Absolute paths never entered or listed (the store's folder, the store file); compared by real path. */
  skip: string[];
  /** Told about each entry that cannot be a task, e.g. a name that is not valid UTF-8. */
  onSkip?: (path: string, reason: string) => void;
}

/**
 * One task per regular file under `root`, in bytewise order of the whole key (a folder
 * sorts as its name plus `/`, so `a-b`, `a.c` and `a/z` come in that order), so the same
 * tree always yields the same keys in the same order.
 * Only one directory listing is held at a time: memory does not grow with the tree.
 *
 * Symlinks: a link to a regular file inside the source is a task under the link's
 * name; links to directories, out of the source, dangling or looping are skipped.
 * Hidden entries are skipped unless an include pattern names them explicitly.
 */
export function* walkDirectory(root: string, options: WalkOptions): Generator<TaskSpec> {
  const rootReal = realpathSync(root);
  const includes = globMatcher(options.include, { dot: false });
  const includesStrict = globMatcher(options.include.filter((p) => p.includes('/')), { dot: false });
  const excludes = globMatcher(options.exclude, { dot: true });
  // By real path: a source reached through a symlink (or a store path that is one) must not
  // turn the store's own files into tasks. The walk never enters a linked folder, so an
  // entry's real path is its key under the source's real path.
  const skip = new Set(options.skip.map(realPathOf));

  /** `inHiddenDir`: some folder above is hidden; `hidden`: the file's own name starts with a dot. */
  const accept = (rel: string, inHiddenDir: boolean, hidden: boolean): boolean => {
    if (excludes?.(rel)) return false;
    if (!includes) return !inHiddenDir && !hidden;
    // picomatch (dot: false) matches a dotted segment only where the pattern spells the dot
    // out; inside a hidden folder a bare-name pattern like `*.log` must not reach in.
    return inHiddenDir ? Boolean(includesStrict?.(rel)) : includes(rel);
  };

  function* walk(relDir: string, inHiddenDir: boolean): Generator<TaskSpec> {
    const dir = relDir ? join(root, relDir) : root;
    for (const entry of listSorted(dir, options.onSkip)) {
      const rel = relDir ? `${relDir}/${entry.name}` : entry.name;
      const abs = join(root, rel);
      if (skip.has(join(rootReal, rel))) continue;
      const hidden = entry.name.startsWith('.');
      if (entry.isDirectory()) {
        if (((inHiddenDir || hidden) && !includesStrict) || excludes?.(rel)) continue;
        yield* walk(rel, inHiddenDir || hidden);
      } else if (entry.isFile()) {
        if (!accept(rel, inHiddenDir, hidden)) continue;
        const stats = statSync(abs, { throwIfNoEntry: false });
        // Listed, then gone before it could be looked at (another process cleaning up): not a task.
        if (stats === undefined) options.onSkip?.(abs, 'removed during the split');
        else yield spec(abs, rel, stats);
      } else if (entry.isSymbolicLink()) {
        const target = linkedFileInside(abs, rootReal);
        if (target && !skip.has(target.real) && accept(rel, inHiddenDir, hidden)) yield spec(abs, rel, target.stats);
      }
    }
  }

  yield* walk('', false);
}

/**
 * A directory's entries in bytewise order (folders as `name/`). Names that are not valid UTF-8 (byte 0xFF,
 * say) cannot be passed to a handler or a shell argument intact, so they are reported
 * through `onSkip` rather than turned into a task for a file that does not exist.
 */
function listSorted(dir: string, onSkip?: (path: string, reason: string) => void): Dirent[] {
  let raw: Dirent<Buffer>[];
  try {
    raw = readdirSync(dir, { withFileTypes: true, encoding: 'buffer' }) as unknown as Dirent<Buffer>[];
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') {
      onSkip?.(dir, 'removed during the split');
      return [];
    }
    throw new UsageError(`cannot read the directory ${dir} (${e.code}); fix its permissions or --exclude it`);
  }
  const entries: { entry: Dirent; order: Buffer }[] = [];
  for (const entry of raw) {
    const bytes = entry.name as unknown as Buffer;
    const name = bytes.toString('utf8');
    if (!Buffer.from(name, 'utf8').equals(bytes)) {
      onSkip?.(join(dir, escapeBytes(bytes)), UNNAMED);
      continue;
    }
    const order = entry.isDirectory() ? Buffer.concat([bytes, SLASH]) : bytes;
    entries.push({ entry: Object.assign(entry, { name }) as unknown as Dirent, order });
  }
  return entries.sort((a, b) => Buffer.compare(a.order, b.order)).map((e) => e.entry);
}

const SLASH = Buffer.from('/');

/** Why a file with a name that is not UTF-8 is skipped (the run's note says how to fix it). */
export const UNNAMED = 'its name is not valid UTF-8';

/** The real path of `path`, or of its folder plus its name when it does not exist (yet). */
function realPathOf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    try {
      return join(realpathSync(dirname(path)), basename(path));
    } catch {
      return path;
    }
  }
}

/** A byte name for messages: invalid bytes as `\xff`. */
function escapeBytes(bytes: Buffer): string {
  let out = '';
  for (const b of bytes) out += b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`;
  return out;
}

function linkedFileInside(link: string, rootReal: string): { real: string; stats: Stats } | null {
  try {
    const real = realpathSync(link);
    if (real !== rootReal && !real.startsWith(rootReal + sep)) return null;
    const stats = statSync(real);
    return stats.isFile() ? { real, stats } : null;
  } catch {
    return null; // dangling or looping
  }
}

function spec(path: string, rel: string, stats: Stats): TaskSpec {
  return {
    key: rel,
    payload: { version: 1, path, rel },
    fingerprint: `${stats.size}:${Math.trunc(stats.mtimeMs)}`,
  };
}
