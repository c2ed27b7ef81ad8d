import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startCli, waitFor } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { PG_URL, pgQuery, pgSchemas } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';

// SPEC §5: `worker --follow` keeps polling for new batches — also when the store does not exist
// yet (SQLite file or PostgreSQL schema): it waits for it, as `worker --batch B` waits for B.
// The worker is a CLI process, ended by SIGTERM; the batches it works on are made and read
// in-process.

const freshPg = pgSchemas('wfollow');

async function followsAStoreCreatedLater(db: string): Promise<void> {
  const p = projectWithFiles(3);
  const worker = startCli(['worker', '--follow', '--db', db, '-j', '1'], { cwd: p.dir, timeoutMs: 120_000 });
  onTestFinished(() => void worker.kill('SIGKILL'));
  let stderr = '';
  worker.stderr!.on('data', (b) => (stderr += b));
  await waitFor(() => stderr.includes('waiting for the store') || worker.exitCode !== null, 30_000, 'the worker to say it waits');
  expect(worker.exitCode, stderr).toBe(null);
  expect(stderr).toMatch(/waiting for the store .* to be created/);

  // The store appears with a batch whose tasks failed; once they are reset, the waiting worker runs them.
  const exec = 'test -e ok && echo {key} >> by-worker.txt';
  expect((await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', exec, '--retries', '0', '-j', '1'])).code).toBe(1);
  writeFileSync(join(p.dir, 'ok'), '');
  expect((await mainIn(p.dir, ['retry-failed', '--db', db])).code).toBe(0);
  const succeeded = async () => JSON.parse((await mainIn(p.dir, ['status', '--json', '--db', db])).stdout).succeeded as number;
  const until = Date.now() + 60_000;
  while ((await succeeded()) < 3 && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
  expect(await succeeded(), stderr).toBe(3);
  expect(worker.exitCode).toBe(null); // --follow: still polling for more
  worker.kill('SIGTERM');
  expect((await worker.result).code).toBe(143);
}

describe('worker --follow on a store that does not exist yet', () => {
  it('SQLite: waits for the file, then works on its batches', async () => {
    const p = projectWithFiles(0);
    await followsAStoreCreatedLater(join(p.dir, 'later', 'store.db'));
  });

  it.skipIf(!PG_URL)('PostgreSQL: waits for the schema, then works on its batches', async () => {
    await followsAStoreCreatedLater(freshPg().db);
  });
});

describe('worker --follow with nothing to do', () => {
  it.skipIf(!PG_URL)('PostgreSQL: keeps its session open between polls instead of connecting for each (a backend start each time)', async () => {
    const { db, schema } = freshPg();
    const p = projectWithFiles(2);
    expect((await mainIn(p.dir, ['run', 'src', '--db', db, '--exec', 'true', '-j', '1'])).code).toBe(0);
    const worker = startCli(['worker', '--follow', '--db', db, '-j', '1'], { cwd: p.dir, timeoutMs: 120_000 });
    onTestFinished(() => void worker.kill('SIGKILL'));
    // The worker's sessions: the last statement each ran names the schema (no other client uses it now).
    const sessions = async () => (await pgQuery<{ pid: number; since: string }>(`SELECT pid, backend_start::text AS since FROM pg_stat_activity WHERE strpos(query, $1) > 0 AND pid <> pg_backend_pid()`, [schema])).map((r) => `${r.pid}@${r.since}`);
    let first: string[] = [];
    for (const until = Date.now() + 30_000; first.length === 0 && worker.exitCode === null && Date.now() < until; ) {
      first = await sessions();
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(worker.exitCode).toBe(null);
    expect(first.length).toBeGreaterThan(0);
    // Polls 2 s and then 4 s apart: two more looks at the store in 7 s, on the same session.
    await new Promise((r) => setTimeout(r, 7000));
    expect(await sessions()).toEqual(expect.arrayContaining(first));
    expect(worker.exitCode).toBe(null);
    worker.kill('SIGTERM');
    expect((await worker.result).code).toBe(143);
  });
});
