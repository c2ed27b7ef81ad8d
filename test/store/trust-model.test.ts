import Database from 'better-sqlite3';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn } from '../helpers/store.js';

const mode = (path: string) => statSync(path).mode & 0o7777;

// Called in-process: real stores, real worker processes. The stored command changed below is
// what a writer of the store can do, so it is changed with SQL. Hiding a --db password from a
// handler's ancestors needs the CLI as a process: test/e2e/db-password-hidden.test.ts.

describe('the trust model: whoever writes the store chooses what runs', () => {
  it('an existing 0644 store (and its -wal, -shm) in a 0755 .splitdance folder is narrowed to 0600 / 0700 by the next run', async () => {
    const p = projectWithFiles(2);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true'])).code).toBe(0);
    const db = dbPathIn(p.dir);
    const hold = new Database(db); // keeps the -wal and -shm files in place
    hold.pragma('user_version');
    const files = [db, `${db}-wal`, `${db}-shm`].filter((f) => existsSync(f));
    expect(files.length).toBeGreaterThan(1);
    for (const f of files) chmodSync(f, 0o644);
    chmodSync(join(p.dir, '.splitdance'), 0o755);
    const r = await mainIn(p.dir, ['run', 'src', '--batch', 'again', '--exec', 'true']);
    hold.close();
    expect(r.code, r.stderr).toBe(0);
    for (const f of files.filter((x) => existsSync(x))) expect(mode(f), f).toBe(0o600);
    expect(mode(join(p.dir, '.splitdance'))).toBe(0o700);
  });

  it('a store others may write (0666 file, 0777 .splitdance) is refused with exit 4, not narrowed: what it holds may have been changed', async () => {
    const p = projectWithFiles(2);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true'])).code).toBe(0);
    const db = dbPathIn(p.dir);
    chmodSync(db, 0o666);
    const r = await mainIn(p.dir, ['run', 'src', '--batch', 'again', '--exec', 'true']);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain(`the store file ${db} may be written by other users (mode 0666)`);
    expect(mode(db)).toBe(0o666);
    chmodSync(db, 0o600);
    chmodSync(join(p.dir, '.splitdance'), 0o777);
    const folder = await mainIn(p.dir, ['worker']);
    expect(folder.code, folder.stderr).toBe(4);
    expect(folder.stderr).toMatch(/the store's folder .*\.splitdance may be written by other users \(mode 0777\).*chmod go-w/);
    expect(mode(join(p.dir, '.splitdance'))).toBe(0o777);
  });

  it('a store in a folder other users may write is refused with exit 4 naming it; nothing is created there', async () => {
    const p = projectWithFiles(2);
    const shared = join(p.dir, 'shared');
    mkdirSync(shared, { mode: 0o700 });
    const old = join(shared, 'old.db');
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--db', old])).code).toBe(0);
    const before = readFileSync(old);
    chmodSync(shared, 0o777);
    for (const args of [['run', 'src', '--exec', 'true', '--db', join(shared, 'new.db')], ['run', 'src', '--batch', 'b', '--exec', 'true', '--db', old], ['worker', '--db', old]]) {
      const r = await mainIn(p.dir, args);
      expect(r.code, args.join(' ')).toBe(4);
      expect(r.stderr).toMatch(new RegExp(`the store's folder ${shared} may be written by other users \\(mode 0777\\).*chmod go-w`));
    }
    expect(readdirSync(shared).filter((f) => f.startsWith('new'))).toEqual([]);
    expect(readFileSync(old).equals(before)).toBe(true);
    // A sticky folder (like /tmp): others cannot replace a file they do not own.
    chmodSync(shared, 0o1777);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--db', join(shared, 'new.db')])).code).toBe(0);
  });

  it('a worker names the stored definition it starts running, a URL password masked: one changed in the store is seen', async () => {
    const p = projectWithFiles(2);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'exit 1', '--retries', '0'])).code).toBe(1);
    expect((await mainIn(p.dir, ['retry-failed'])).code).toBe(0);
    // What a writer of the store can do: change the stored command.
    const marker = join(p.dir, 'ran-from-store');
    const template = `echo https://bob:hunter2@example.invalid/{key} >> ${marker}`;
    const db = new Database(dbPathIn(p.dir));
    db.prepare("UPDATE batches SET job = json_set(job, '$.handler.template', ?)").run(template);
    db.close();
    const w = await mainIn(p.dir, ['worker']);
    expect(w.code, w.stderr).toBe(0);
    const [batch] = JSON.parse((await mainIn(p.dir, ['batches', '--json'])).stdout) as { batch: string }[];
    expect(w.stderr).toContain(`batch ${batch!.batch}: running its stored definition --exec "echo https://bob:***@example.invalid/{key} >> ${marker}"`);
    expect(w.stderr).not.toContain('hunter2');
    expect(readFileSync(marker, 'utf8')).toMatch(/hunter2/); // it did run: the line above is the warning
  });
});
