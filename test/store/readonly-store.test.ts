import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { missing } from '../helpers/services.js';

/**
 * File modes do not stop root (CI runs as root), so the store is made really read-only:
 * its folder is bind-mounted read-only elsewhere, and the commands run through that mount.
 */
const isRoot = !missing('root', 'the read-only store tests');
const mounts: string[] = [];

function readonlyView(dir: string): string {
  const view = tempDir('sd-ro-');
  execFileSync('mount', ['--bind', dir, view]);
  mounts.push(view);
  execFileSync('mount', ['-o', 'remount,ro,bind', view]);
  return view;
}

afterAll(() => {
  for (const view of mounts.reverse()) {
    execFileSync('umount', [view]);
    rmdirSync(view);
  }
});

const INSPECT = (view: string, out: string) => [
  ['status'],
  ['status', '--json'],
  ['tasks'],
  ['tasks', '--json'],
  ['show', 'f000.log'],
  ['logs', 'f000.log'],
  ['batches'],
  ['report', '--html', join(out, 'report.html')],
  ['status', '--db', join(view, '.splitdance', 'splitdance.db')],
  ['run', 'src', '--dry-run', '--exec', 'true'],
  ['run', 'src', '--dry-run', '--json', '--exec', 'true'],
];

describe.skipIf(!isRoot)('inspection commands on a read-only store (needs root for a read-only bind mount)', () => {
  it('status, tasks, show, logs, report, batches and run --dry-run work on a store in a read-only folder', async () => {
    const p = projectWithFiles(2);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'echo out {key}; exit 1', '--retries', '0'])).code).toBe(1);
    const db = join(p.dir, '.splitdance', 'splitdance.db');
    expect(existsSync(`${db}-shm`)).toBe(false); // the run closed it cleanly: SQLite must create -shm to read
    const before = readFileSync(db);
    const view = readonlyView(p.dir);
    const out = tempDir();
    for (const args of INSPECT(view, out)) {
      const r = await mainIn(view, args);
      // status exits with the batch's verdict: its tasks FAILED (SPEC §6).
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(args[0] === 'status' ? 1 : 0);
    }
    expect((await mainIn(view, ['logs', 'f001.log'])).stdout).toBe('out f001.log\n');
    expect(JSON.parse((await mainIn(view, ['status', '--json'])).stdout)).toMatchObject({ total: 2, failed: 2 });
    expect(readFileSync(join(out, 'report.html'), 'utf8')).toContain('f000.log');
    // watch follows the finished batch to its verdict (1: failures), by default and by name.
    const name = JSON.parse((await mainIn(view, ['status', '--json'])).stdout).batch as string;
    for (const args of [['watch'], ['watch', '--batch', name]]) {
      const w = await mainIn(view, args);
      expect(w.code, `${args.join(' ')}: ${w.stderr}`).toBe(1);
      expect(w.stdout).toMatch(/2\/2 done, 0 succeeded, 2 failed/);
    }
    expect(readFileSync(db).equals(before)).toBe(true);
    // Writing commands still say the store cannot be written (exit 4).
    expect((await mainIn(view, ['pause'])).code).toBe(4);
  });

  it('a store left with its -wal and -shm files (a killed writer) is read with its latest commits', async () => {
    const p = projectWithFiles(1);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true'])).code).toBe(0);
    const db = join(p.dir, '.splitdance', 'splitdance.db');
    // A writer that dies without closing: its last commit lives only in the -wal file.
    const script = `const D = require(${JSON.stringify(join(ROOT, 'node_modules/better-sqlite3'))});
      const db = new D(${JSON.stringify(db)}); db.pragma('wal_autocheckpoint = 0');
      db.prepare("UPDATE batches SET name = 'renamed'").run(); process.exit(0);`;
    execFileSync(process.execPath, ['-e', script]);
    expect(existsSync(`${db}-wal`) && existsSync(`${db}-shm`)).toBe(true);
    const view = readonlyView(p.dir);
    const status = await mainIn(view, ['status', '--json']);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ batch: 'renamed', total: 1, succeeded: 1 });
  });

  it('a -wal file whose index is missing is refused with exit 4 and the fix, never read stale', async () => {
    const p = projectWithFiles(1);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true'])).code).toBe(0);
    const db = join(p.dir, '.splitdance', 'splitdance.db');
    const script = `const D = require(${JSON.stringify(join(ROOT, 'node_modules/better-sqlite3'))});
      const db = new D(${JSON.stringify(db)}); db.pragma('wal_autocheckpoint = 0');
      db.prepare("UPDATE batches SET name = 'renamed'").run(); process.exit(0);`;
    execFileSync(process.execPath, ['-e', script]);
    execFileSync('rm', [`${db}-shm`]);
    const view = readonlyView(p.dir);
    const status = await mainIn(view, ['status']);
    expect(status.code).toBe(4);
    expect(status.stderr).toContain('cannot be read without a writable folder');
  });
});

