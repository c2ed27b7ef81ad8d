import Database from 'better-sqlite3';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreError, UsageError } from '../../src/errors.js';
import { openStore, peekBatch, trustedOwners } from '../../src/store/open-store.js';
import type { TaskStore } from '../../src/store/task-store.js';
import { tempDir } from '../helpers/cli.js';
import { missing } from '../helpers/services.js';
import { keys, newBatch, spec } from './contract.js';

/**
 * A SQLite store that is not the user's own — another user owns its file, a companion or its
 * folder, or others may write it — is refused by every open that leads to running what it
 * holds, before SQLite makes a single file; commands that only look may read it, and make no
 * -wal or -shm there. Needs root, to give files to another user (`nobody`).
 */
const NOBODY = 65534;
const NOGROUP = 65534;

const dirs: string[] = [];
const opened: TaskStore[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function freshDir(): string {
  const d = tempDir('sd-owner-');
  dirs.push(d);
  return d;
}

/** A store with one batch in `dir/.splitdance`, closed (its WAL folded into the file, no -wal or -shm left). */
async function storeIn(dir: string): Promise<string> {
  const path = join(dir, '.splitdance', 'splitdance.db');
  const s = await openStore(path, 'create');
  await s.enqueue(newBatch('b'), keys(3).map(spec));
  await s.close();
  expect(readdirSync(join(dir, '.splitdance')).filter((f) => f.startsWith('splitdance.db-'))).toEqual([]);
  return path;
}

/** Gives the store, its companions and its folder to nobody, as a store nobody made. */
function giveToNobody(path: string): void {
  for (const f of [join(path, '..'), path, `${path}-wal`, `${path}-shm`]) if (existsSync(f)) chownSync(f, NOBODY, NOGROUP);
}

const companionsOf = (path: string) => readdirSync(join(path, '..')).filter((f) => /-(wal|shm|journal)$/.test(f));

/** Every open but an inspection's must refuse `path` with a StoreError matching `message`, changing nothing. */
async function expectRefusedEverywhere(path: string, message: RegExp, trust: number[] = []): Promise<void> {
  const before = readFileSync(path);
  const listing = readdirSync(join(path, '..')).sort();
  const opens: [string, () => Promise<unknown>][] = [
    ['create', () => openStore(path, 'create', { trust })],
    ['write', () => openStore(path, 'write', { trust })],
    ['existing, read-only (run --dry-run)', () => openStore(path, 'existing', { readonly: true, trust })],
    ['peek (run)', () => peekBatch(path, 'b', trust)],
  ];
  for (const [what, open] of opens) {
    const err = await open().then(
      (s) => {
        if (s && typeof s === 'object' && 'close' in s) opened.push(s as TaskStore);
        return null;
      },
      (e: unknown) => e,
    );
    expect(err, what).toBeInstanceOf(StoreError);
    expect((err as Error).message, what).toMatch(message);
  }
  expect(readFileSync(path).equals(before)).toBe(true);
  expect(readdirSync(join(path, '..')).sort()).toEqual(listing);
}

describe.skipIf(missing('root', 'the store-owner tests (they give files to nobody)'))('a SQLite store that is not the user’s own', () => {
  it('another user’s store (file and folder) is refused, naming the owner and the fix; with --trust-store-owner it opens', async () => {
    const path = await storeIn(freshDir());
    giveToNobody(path);
    await expectRefusedEverywhere(path, /belongs to nobody \(uid 65534\), not to you \(root\).*--trust-store-owner nobody/);
    expect(companionsOf(path)).toEqual([]);
    const s = await openStore(path, 'write', { trust: trustedOwners(['nobody']) });
    opened.push(s);
    expect((await s.listBatches()).map((b) => b.name)).toEqual(['b']);
  });

  it('a store file of another user in the user’s own folder is refused, and so is a -wal or -shm of another user', async () => {
    const path = await storeIn(freshDir());
    chownSync(path, NOBODY, NOGROUP);
    await expectRefusedEverywhere(path, new RegExp(`the store ${path} belongs to nobody`));
    chownSync(path, 0, 0);
    for (const companion of [`${path}-wal`, `${path}-shm`]) {
      writeFileSync(companion, '');
      chownSync(companion, NOBODY, NOGROUP);
      await expectRefusedEverywhere(path, new RegExp(`the store file ${companion} belongs to nobody`));
      rmSync(companion);
    }
  });

  it('a store folder of another user is refused, even holding the user’s own file', async () => {
    const path = await storeIn(freshDir());
    chownSync(join(path, '..'), NOBODY, NOGROUP);
    await expectRefusedEverywhere(path, /the store's folder .*\.splitdance belongs to nobody/);
  });

  it('a store file or companion others may write (group or other write bit) is refused, naming chmod go-w', async () => {
    const path = await storeIn(freshDir());
    for (const m of [0o620, 0o602, 0o666]) {
      chmodSync(path, m);
      await expectRefusedEverywhere(path, new RegExp(`the store file ${path} may be written by other users \\(mode 0${m.toString(8)}\\).*chmod go-w ${path}`));
    }
    chmodSync(path, 0o600);
    writeFileSync(`${path}-wal`, '', { mode: 0o666 });
    chmodSync(`${path}-wal`, 0o666);
    await expectRefusedEverywhere(path, new RegExp(`${path}-wal may be written by other users`));
    rmSync(`${path}-wal`);
    chmodSync(join(path, '..'), 0o770);
    await expectRefusedEverywhere(path, /the store's folder .* may be written by other users \(mode 0770\).*chmod go-w/);
  });

  it('a companion that is a symlink is refused, and nothing is written through it', async () => {
    const dir = freshDir();
    const path = await storeIn(dir);
    const target = join(dir, 'elsewhere');
    writeFileSync(target, 'keep');
    symlinkSync(target, `${path}-wal`);
    await expectRefusedEverywhere(path, /-wal is a symlink/);
    expect(readFileSync(target, 'utf8')).toBe('keep');
  });

  it('an empty store file another user made beforehand in a sticky shared folder is refused, not adopted', async () => {
    const shared = join(freshDir(), 'tmp');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const path = join(shared, 'store.db');
    writeFileSync(path, '');
    chownSync(path, NOBODY, NOGROUP);
    await expectRefusedEverywhere(path, new RegExp(`the store ${path} belongs to nobody`));
    expect(statSync(path).size).toBe(0);
    expect(statSync(path).uid).toBe(NOBODY);
    // A store of the user's own in that folder is fine: others cannot replace a file they do not own.
    const own = await openStore(join(shared, 'own.db'), 'create');
    opened.push(own);
  });

  it('the user’s own store that others may only read is narrowed (0600 files, 0700 .splitdance) by a writing open', async () => {
    const path = await storeIn(freshDir());
    chmodSync(path, 0o644);
    chmodSync(join(path, '..'), 0o755);
    const s = await openStore(path, 'write');
    opened.push(s);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(path, '..')).mode & 0o777).toBe(0o700);
  });

  it('an inspection reads another user’s store and makes no -wal or -shm there; one its owner holds open is read through its own', async () => {
    const path = await storeIn(freshDir());
    giveToNobody(path);
    const before = readFileSync(path);
    const s = await openStore(path, 'read');
    expect((await s.listBatches()).map((b) => b.name)).toEqual(['b']);
    await s.close();
    expect(companionsOf(path)).toEqual([]);
    expect(readFileSync(path).equals(before)).toBe(true);
    // The owner's run has it open: its -wal (with a commit not yet in the file) and -shm are there.
    const owner = new Database(path);
    owner.pragma('wal_autocheckpoint = 0');
    owner.prepare("UPDATE batches SET name = 'renamed'").run();
    giveToNobody(path);
    expect(statSync(`${path}-wal`).size).toBeGreaterThan(0);
    const again = await openStore(path, 'read');
    expect((await again.listBatches()).map((b) => b.name)).toEqual(['renamed']);
    await again.close();
    owner.close();
  });

  it('--trust-store-owner takes a user name or a uid; a name this machine does not know is a usage error', () => {
    expect(trustedOwners(['nobody', '1234'])).toEqual([NOBODY, 1234]);
    expect(trustedOwners(undefined)).toEqual([]);
    expect(() => trustedOwners(['no-such-user-here'])).toThrow(UsageError);
    expect(() => trustedOwners(['no-such-user-here'])).toThrow(/--trust-store-owner "no-such-user-here" names no user on this machine/);
  });
});
