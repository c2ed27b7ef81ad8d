import { readdirSync, realpathSync, statSync, type Dirent, type Stats } from 'node:fs';
import { join, sep } from 'node:path';
import picomatch from 'picomatch';
import { UsageError } from '../errors.js';
import type { TaskSpec } from '../store/task-store.js';

export interface WalkOptions {
  include: string[];
  exclude: string[];
  /** Absolute paths never entered or listed (the store's folder, the store file). */
  skip: string[];
}

/**
 * One task per regular file under `root`, depth first with each directory's entries
 * in code-unit order, so the same tree always yields the same keys in the same order.
 * Only one directory listing is held at a time: memory does not grow with the tree.
 *
 * Symlinks: a link to a regular file inside the source is a task under the link's
 * name; links to directories, out of the source, dangling or looping are skipped.
 * Hidden entries are skipped unless an include pattern names them explicitly.
 */
export function* walkDirectory(root: string, options: WalkOptions): Generator<TaskSpec> {
  const rootReal = realpathSync(root);
  const includes = options.include.length > 0 ? picomatch(options.include, { basename: true }) : null;
  const includesStrict = options.include.length > 0 ? picomatch(options.include) : null;
  const excludes = options.exclude.length > 0 ? picomatch(options.exclude, { dot: true, basename: true }) : null;
  const skip = new Set(options.skip);

  const accept = (rel: string, underHidden: boolean): boolean => {
    if (excludes?.(rel)) return false;
    if (!includes) return !underHidden;
    // Under a hidden segment only a pattern that spells the dot out may include it.
    return underHidden ? includesStrict!(rel) : includes(rel);
  };

  function* walk(relDir: string, underHidden: boolean): Generator<TaskSpec> {
    const dir = relDir ? join(root, relDir) : root;
    for (const entry of listSorted(dir)) {
      const rel = relDir ? `${relDir}/${entry.name}` : entry.name;
      const abs = join(root, rel);
      if (skip.has(abs)) continue;
      const hidden = underHidden || entry.name.startsWith('.');
      if (entry.isDirectory()) {
        if ((hidden && !includes) || excludes?.(rel)) continue;
        yield* walk(rel, hidden);
      } else if (entry.isFile()) {
        if (accept(rel, hidden)) yield spec(abs, rel, statSync(abs));
      } else if (entry.isSymbolicLink()) {
        const target = linkedFileInside(abs, rootReal);
        if (target && !skip.has(target.real) && accept(rel, hidden)) yield spec(abs, rel, target.stats);
      }
    }
  }

  yield* walk('', false);
}

function listSorted(dir: string): Dirent[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new UsageError(`cannot read the directory ${dir} (${e.code}); fix its permissions or --exclude it`);
  }
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
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
