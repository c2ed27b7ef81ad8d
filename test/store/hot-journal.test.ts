import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';

/**
 * A run killed while it creates its store, in the one write SQLite makes with a rollback
 * journal (the switch to WAL), leaves a hot journal beside a non-empty file. The next run's
 * first look at the store is read-only, and SQLite refuses a read-only connection there
 * (SQLITE_READONLY_ROLLBACK): R10's overlapping runs after a SIGKILL met it as "cannot be
 * written; fix its permissions". Made here the same way: a writer killed mid-transaction on a
 * new, empty store file, its pages already spilled into the file.
 */
function killedCreator(db: string): void {
  const script = `const fs = require('node:fs');
    fs.mkdirSync(require('node:path').dirname(${JSON.stringify(db)}), { recursive: true });
    fs.closeSync(fs.openSync(${JSON.stringify(db)}, 'wx', 0o600));
    const D = require(${JSON.stringify(join(ROOT, 'node_modules/better-sqlite3'))});
    const db = new D(${JSON.stringify(db)});
    db.pragma('cache_size = 2');
    db.exec('BEGIN; CREATE TABLE spill(x)');
    const insert = db.prepare('INSERT INTO spill VALUES (randomblob(2000))');
    for (let i = 0; i < 200; i++) insert.run();
    process.kill(process.pid, 'SIGKILL');`;
  expect(spawnSync(process.execPath, ['-e', script]).signal).toBe('SIGKILL');
  expect(readFileSync(db).length).toBeGreaterThan(0);
  expect(existsSync(`${db}-journal`)).toBe(true);
}

describe('a store its creator was killed writing (a hot rollback journal)', () => {
  it('the next run rolls it back and runs every task', async () => {
    const p = projectWithFiles(3);
    const db = join(p.dir, '.splitdance', 'splitdance.db');
    killedCreator(db);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true']);
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(`${db}-journal`)).toBe(false);
    const status = await mainIn(p.dir, ['status', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ total: 3, succeeded: 3 });
  });

  it('a command that only reads refuses it with exit 4, names the journal and the fix, and writes nothing', async () => {
    const p = projectWithFiles(1);
    const db = join(p.dir, '.splitdance', 'splitdance.db');
    killedCreator(db);
    const before = [readFileSync(db), readFileSync(`${db}-journal`)];
    for (const args of [['status'], ['tasks', '--json'], ['run', 'src', '--dry-run', '--exec', 'true']]) {
      const r = await mainIn(p.dir, args);
      expect(r.code, args.join(' ')).toBe(4);
      expect(r.stderr, args.join(' ')).toContain(`was left mid-write by a killed process (its rollback journal ${db}-journal is still there)`);
      expect(r.stderr).toContain('`splitdance run` with this store rolls it back');
    }
    expect(readFileSync(db).equals(before[0]) && readFileSync(`${db}-journal`).equals(before[1])).toBe(true);
    expect(existsSync(`${db}-wal`) || existsSync(`${db}-shm`)).toBe(false);
  });
});
