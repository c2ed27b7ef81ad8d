import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, handler } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { missing } from '../helpers/services.js';
import { dbPathIn } from '../helpers/store.js';

// Issue 25 item 12: a store whose -wal or -shm file the user may not read (left by another
// user's run). SQLite says "unable to open database file", and `status` blamed the folder,
// though the folder is writable. The message names the file. File modes do not stop root,
// so the commands run as `nobody` (setpriv), the store and its folder given to that user and
// the -wal/-shm files left to root, mode 0600: the commands are CLI processes of that user (the
// store they open is made in-process).

const NOBODY = 65534;
const canDropRoot = !missing('root', 'the unreadable -wal/-shm tests (they run commands as nobody)') && spawnSync('setpriv', ['--version']).status === 0;

const open: Database.Database[] = [];
afterEach(() => {
  for (const db of open.splice(0)) db.close();
});

/** A finished batch whose store, held open here, has a -wal and a -shm file; the store is nobody's, those two root's. */
async function storeWithRootSidecars(): Promise<{ dir: string; db: string }> {
  const p = projectWithFiles(2);
  const r = await mainIn(p.dir, ['run', 'src', '--handler', handler('ok'), '--quiet']);
  expect(r.code, r.stderr).toBe(0);
  const db = dbPathIn(p.dir);
  const conn = new Database(db);
  open.push(conn);
  conn.prepare("UPDATE batches SET name = name WHERE name = 'none'").run(); // a write: the -wal and -shm exist from here on
  expect(existsSync(`${db}-wal`) && existsSync(`${db}-shm`)).toBe(true);
  chmodSync(p.dir, 0o755);
  chownSync(`${p.dir}/.splitdance`, NOBODY, NOBODY);
  chownSync(db, NOBODY, NOBODY);
  chmodSync(`${db}-wal`, 0o600);
  chmodSync(`${db}-shm`, 0o600);
  return { dir: p.dir, db };
}

function asNobody(args: string[], cwd: string) {
  return spawnSync('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, BIN, ...args], { cwd, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
}

describe.skipIf(!canDropRoot)('a store whose -wal or -shm file this user may not read', () => {
  it.each(['-wal', '-shm'])('%s unreadable: status names that file, not the folder (exit 4)', async (which) => {
    const { dir, db } = await storeWithRootSidecars();
    // Only the file under test is closed to nobody.
    for (const other of ['-wal', '-shm'].filter((s) => s !== which)) chownSync(`${db}${other}`, NOBODY, NOBODY);
    const r = asNobody(['status'], dir);
    expect(r.status, r.stderr).toBe(4);
    expect(r.stderr.trim()).toBe(
      `splitdance: error: the store ${db} cannot be opened: its ${db}${which} cannot be read by this user (EACCES); give it the store file's owner and permissions, or run as that user`,
    );
    expect(r.stderr).not.toContain('folder');
    const run = asNobody(['run', 'src', '--handler', handler('ok')], dir);
    expect(run.status, run.stderr).toBe(4);
    expect(run.stderr).toContain(`its ${db}${which} cannot be read and written by this user (EACCES)`);
  }, 40_000);
});
