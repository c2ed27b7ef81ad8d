import { randomBytes } from './crypto-on-use.js';
import { lstatSync, realpathSync } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, sep } from 'node:path';

/**
 * The rules every file splitdance replaces follows (SPEC §9: declared outputs, the metrics
 * file, the report): what is at the path may be replaced only if it is missing or a regular
 * file, and never one of the store's own files.
 */

/** What is at `path` when it is neither missing nor a regular file (`a folder`, `a symlink`, …), or null. */
export function notReplaceable(path: string): string | null {
  try {
    const st = lstatSync(path);
    if (st.isFile()) return null;
    if (st.isDirectory()) return 'a folder';
    if (st.isSymbolicLink()) return 'a symlink';
    if (st.isFIFO()) return 'a FIFO';
    if (st.isSocket()) return 'a socket';
    return 'a device';
  } catch {
    return null; // missing (or unreachable: writing it fails on its own, saying why)
  }
}

/** `path` with its folder's symlinks resolved (the file itself is not followed: it is what gets replaced). */
function realPath(path: string): string {
  try {
    return join(realpathSync(dirname(path)), basename(path));
  } catch {
    return path;
  }
}

/** A SQLite store's own files, and the folders splitdance keeps beside it (its logs; `.splitdance`). */
export interface StorePaths {
  files: string[];
  folders: string[];
}

/** The files and folders of the store at `db` (a path; a URL has only its logs folder, `logs`). */
export function storePaths(db: string | null, logs: string): StorePaths {
  if (db === null) return { files: [], folders: [logs] };
  const dir = dirname(db);
  return {
    files: [db, `${db}-wal`, `${db}-shm`, `${db}-journal`],
    folders: basename(dir) === '.splitdance' ? [logs, dir] : [logs],
  };
}

/** Which of the store's paths `path` is, or lies in (compared by real path), or null. */
export function storePathAt(path: string, store: StorePaths): string | null {
  const p = realPath(path);
  for (const f of store.files) if (p === realPath(f)) return f;
  for (const d of store.folders) {
    const r = realPath(d);
    if (p === r || p.startsWith(r.endsWith(sep) ? r : r + sep)) return d;
  }
  return null;
}

/**
 * Replaces the regular file at `path` (or creates it) with `text`, atomically: a temporary
 * file beside it, created exclusively (never through a symlink, a random name no one can plant
 * beforehand), then a rename. A new file is 0600, a replaced one keeps its mode (a collector
 * reading it as another user goes on reading it); the folders made on the way (`makeFolders`) are 0700.
 * Refuses anything but a regular file at the path (the rename would replace it). The temporary
 * name starts with a dot and ends in `.tmp`, so a collector reading `*.prom` never reads it.
 */
export async function replaceFile(path: string, text: string, { what, makeFolders }: { what: string; makeFolders: boolean }): Promise<void> {
  const blocked = notReplaceable(path);
  if (blocked) throw new Error(`${what} ${path} is ${blocked}, not a regular file`);
  const dir = dirname(path);
  if (makeFolders) await mkdir(dir, { recursive: true, mode: 0o700 });
  const mode = modeOf(path) ?? 0o600;
  const temp = join(dir, `.${leadingBytes(basename(path), 160)}.${randomBytes(12).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'wx', mode);
    try {
      await handle.writeFile(text);
      await handle.chmod(mode); // the umask narrowed a kept mode at creation
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw err;
  }
}

/** At most `bytes` bytes of `name` (UTF-8), cut on a character boundary: a temporary name must fit NAME_MAX (255 bytes). */
export function leadingBytes(name: string, bytes: number): string {
  return Buffer.byteLength(name) <= bytes ? name : Buffer.from(name).subarray(0, bytes).toString().replace(/\uFFFD+$/, '');
}

function modeOf(path: string): number | null {
  try {
    return lstatSync(path).mode & 0o777;
  } catch {
    return null;
  }
}
