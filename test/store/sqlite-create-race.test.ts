import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers/cli.js';

/**
 * Several `run`s started together on a new store (two cron jobs, a retry loop) all create it:
 * each must open it, none may exit 4 because another was switching it to WAL (SQLite answers
 * that with an immediate SQLITE_BUSY) or was half-way through its first migration.
 */
const OPENER = `
const [dist, path, at] = process.argv.slice(1);
const { openStore } = await import(dist + '/store/open-store.js');
while (Date.now() < Number(at)) {}
try { const s = await openStore(path, 'create'); console.log(s.identity.length === 32 ? 'ok' : 'no identity'); await s.close(); }
catch (e) { console.log('ERR ' + e.message); }`;

function openAt(path: string, at: number): Promise<string> {
  return new Promise((done) => {
    let out = '';
    const child = spawn(process.execPath, ['--input-type=module', '-e', OPENER, join(ROOT, 'dist'), path, String(at)]);
    child.stdout.on('data', (b) => (out += b));
    child.on('close', () => done(out.trim()));
  });
}

describe('a new SQLite store created by several processes at once', () => {
  it('opens in every one of them, 15 times over (4 processes each)', async () => {
    const failures: string[] = [];
    for (let round = 0; round < 15; round++) {
      const path = join(tempDir('sd-race-'), 'splitdance.db');
      const at = Date.now() + 250; // all four have started by then; they spin until that instant
      for (const r of await Promise.all([0, 1, 2, 3].map(() => openAt(path, at)))) if (r !== 'ok') failures.push(r);
    }
    expect(failures).toEqual([]);
  });
});
