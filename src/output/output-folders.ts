import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readlinkSync, statSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { strictFoldersOf, type OutputPaths } from './output-path.js';

/**
 * The folders of a declared output below its anchor (the folder the user typed: output-path.ts's
 * RenderedOutput), walked without following a symlink. A value names them (`out/{rel}.gz` with
 * the key `a/x.log` names `out/a`), so anyone who can write a shared output folder could plant
 * a link there (`out/a -> /elsewhere`) and send the attempt's temporary file and the rename
 * that follows to the link's target, replacing a file there. Node has no `openat`, so each
 * folder is checked by path: lstat (a symlink fails the task for good, naming it), made
 * when missing, and the last one opened with O_NOFOLLOW and compared (device and inode) with
 * what the walk saw. The anchor and the folders above it are followed as the user typed them
 * (`out -> /mnt/big/out` is theirs to make). The folders are the user's data, like the files
 * in them: made with the umask's mode (`mkdir -p`'s), not 0700 (the store's logs stay private).
 */

/** An output folder's mode before the umask: as `mkdir` makes one. */
const FOLDER_MODE = 0o777;

/** Which folder a walk ended on. */
export interface FolderId {
  dev: number;
  ino: number;
}

/** Why an output's folders cannot be used, and whether a retry could help. */
export interface FolderProblem {
  message: string;
  retryable: boolean;
  /** A folder is missing (only when not making them): nothing could have been written there. */
  missing?: boolean;
}

/**
 * Walks the output's folders below its anchor: `make` creates the missing ones (mode 0777 less
 * the umask) and the anchor itself, as `mkdir -p` would. Returns the last folder's identity, or
 * why the output cannot be written there (a symlink or a file among them fails for good).
 */
export function walkOutputFolders(out: OutputPaths, make: boolean): FolderId | FolderProblem {
  const folder = dirname(out.path);
  const names = strictNames(folder, strictFoldersOf(out.temp));
  let at = names.reduce((dir) => dirname(dir), folder);
  try {
    if (make) mkdirSync(at, { recursive: true, mode: FOLDER_MODE });
    let st = statSync(at); // the anchor: followed, as the user typed it
    for (const name of names) {
      at = join(at, name);
      st = lstatOrMake(at, make);
      if (st.isSymbolicLink()) return linked(out.path, at);
      if (!st.isDirectory()) return { message: `the declared output ${out.path} cannot be written: ${at} is not a folder; remove it or choose another --output`, retryable: false };
    }
    if (names.length === 0) return { dev: st.dev, ino: st.ino };
    const fd = openSync(at, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    try {
      const opened = fstatSync(fd);
      if (opened.dev !== st.dev || opened.ino !== st.ino) return { message: `the declared output's folder ${at} was replaced while splitdance checked it; nothing was written there`, retryable: true };
    } finally {
      closeSync(fd);
    }
    return { dev: st.dev, ino: st.ino };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR') {
      // A file where the anchor should be, or a folder the walk had passed made a link or a file meanwhile.
      return { message: `the declared output ${out.path} cannot be written: ${at}, or a folder above it, is not a folder (or was replaced by a symlink while splitdance walked it)`, retryable: false };
    }
    if (code === 'ENOENT' && !make) return { message: `the declared output's folder ${at} is missing`, retryable: true, missing: true };
    // ENAMETOOLONG: a file system with a smaller NAME_MAX than Linux's own; no retry helps.
    return { message: `the declared output's folder ${at} could not be made: ${(err as Error).message}`, retryable: code !== 'ENAMETOOLONG' };
  }
}

/** Whether a walk's result is a problem. */
export function isProblem(walked: FolderId | FolderProblem): walked is FolderProblem {
  return 'message' in walked;
}

/** The last `count` names of `folder`: those below its anchor. */
function strictNames(folder: string, count: number): string[] {
  const names = folder.split('/').filter((n) => n !== '');
  return count > 0 ? names.slice(-count) : [];
}

function lstatOrMake(path: string, make: boolean): Stats {
  try {
    return lstatSync(path);
  } catch (err) {
    if (!make || (err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  try {
    mkdirSync(path, { mode: FOLDER_MODE });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err; // made meanwhile: checked below like any other
  }
  return lstatSync(path);
}

function linked(output: string, at: string): FolderProblem {
  let target = '';
  try {
    target = ` (to ${readlinkSync(at)})`;
  } catch {
    // not a link after all (a file where a folder should be): named as it is
  }
  return {
    message: `the declared output ${output} is not written through a symlink: ${at} is one${target}; splitdance follows no link below the folder the --output template names: remove it`,
    retryable: false,
  };
}
