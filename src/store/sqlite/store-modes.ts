import { chmodSync, existsSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { StoreError } from '../../errors.js';

/**
 * Whoever can write the store can make every `run` and `worker` on it run commands as its
 * user (docs/trust-model.md), so before a writing open the store's files and folder are kept
 * to their owner: files that splitdance made (the store, its -wal, -shm and -journal) and
 * are wider than 0600 are narrowed to 0600, its own `.splitdance` folder to 0700, as log
 * folders are. Any other folder that others may write (no sticky bit, unlike /tmp) is not
 * splitdance's to change: that store is refused, naming the folder and the fix.
 */
export function keepStoreToItsOwner(path: string): void {
  const uid = process.getuid?.();
  const real = existsSync(path) ? realpathSync(path) : path;
  for (const file of [real, `${real}-wal`, `${real}-shm`, `${real}-journal`]) {
    if (!existsSync(file)) continue;
    const st = statSync(file);
    if (st.isFile() && st.uid === uid && (st.mode & 0o077) !== 0) chmodSync(file, 0o600);
  }
  const dir = dirname(real);
  if (!existsSync(dir)) return; // created 0700 with the store
  const st = statSync(dir);
  const othersMayWrite = (st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0;
  if (!othersMayWrite) return;
  if (basename(dir) === '.splitdance' && st.uid === uid) {
    chmodSync(dir, 0o700);
    return;
  }
  throw new StoreError(
    `the store's folder ${dir} may be written by other users (mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')}): ` +
      `they could replace the store and run commands as you; narrow it (chmod go-w ${dir}) or keep the store in a folder of your own`,
  );
}
