import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { handler } from '../helpers/cli.js';
import { jsonOf, mainInProcessEnv } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { missing } from '../helpers/services.js';
import { readStore } from '../helpers/read-store.js';
import { dbPathIn } from '../helpers/store.js';

// SQLite keeps a statement's undo log (its statement journal) in a file of the temporary
// folder once it outgrows 64 KB; with that folder full, the commit failed and the run
// stopped with "disk full" although the store's own disk had room. The store's writes keep
// that log in memory. Here TMPDIR and SQLITE_TMPDIR are a tiny tmpfs filled to the last
// byte (mounting needs root; CI runs as root).

const isRoot = !missing('root', 'the full temporary folder tests');
const mounts: string[] = [];

afterAll(() => {
  for (const m of mounts) execFileSync('umount', ['-l', m]);
});

function fullTempDir(parent: string): string {
  const dir = join(parent, 'tmp');
  mkdirSync(dir);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir]);
  mounts.push(dir);
  try {
    execFileSync('dd', ['if=/dev/zero', `of=${join(dir, 'fill')}`, 'bs=4k'], { stdio: 'ignore' });
  } catch {
    // dd ends with ENOSPC: the folder is full
  }
  return dir;
}

describe.skipIf(!isRoot)('a full temporary folder', () => {
  it('does not fail a run whose commits change many rows at once: the batch completes', async () => {
    const files = 1500;
    const p = projectWithFiles(files);
    const tmp = fullTempDir(p.dir);
    const env = { TMPDIR: tmp, SQLITE_TMPDIR: tmp };
    const ok = handler('ok');
    // A first run stops at once, leaving the batch's tasks PENDING…
    const first = await mainInProcessEnv(p.dir, ['run', 'src', '--handler', ok, '--max-runtime', '1ms', '--quiet'], env);
    expect(first.code, first.stderr).toBe(3);
    // …and a second with another retry budget gives every one of them the new budget in one
    // transaction (far over 64 KB of changed pages), then runs the batch to the end.
    const second = await mainInProcessEnv(p.dir, ['run', 'src', '--handler', ok, '--retries', '3', '--quiet'], env);
    expect(second.stderr).not.toMatch(/full/);
    expect(second.code, second.stderr).toBe(0);
    const db = dbPathIn(p.dir);
    const status = await jsonOf<{ total: number; succeeded: number }>(p.dir, ['status']);
    expect({ total: status.total, succeeded: status.succeeded }).toEqual({ total: files, succeeded: files });
    // Every task but those the first run finished took the new budget.
    const missed = await readStore(db, async (store) => {
      const batch = (await store.latestBatch())!;
      let n = 0;
      for (const t of await store.listTasks({ batchId: batch.id })) {
        if (t.maxAttempts === 4) continue;
        const firstRunSuccess = (await store.attemptsOf(t.id)).some((a) => a.outcome === 'SUCCESS' && a.jobVersion === 1);
        if (!firstRunSuccess) n++;
      }
      return n;
    });
    expect(missed).toBe(0);
  });
});
