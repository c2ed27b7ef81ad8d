import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sleep, startCli, waitFor } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, storedAttempts } from '../helpers/store.js';

/**
 * On the binary: the test freezes the coordinator's process (SIGSTOP), which in-process would be this one.
 *
 * No slot waits for the coordinator (SPEC §5, queued attempts): each slot holds its next
 * attempt before the current one ends, and starts it on its own. Proven by freezing the
 * coordinator (SIGSTOP) while a slot runs: the slot's next attempt still starts.
 */
const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

async function frozenCoordinatorRunsNext(args: string[], dir: string, starts: string, env: NodeJS.ProcessEnv = {}): Promise<void> {
  const run = startCli(args, { cwd: dir, env });
  await waitFor(() => lines(starts).length >= 1, 20_000, 'the first attempt to start');
  process.kill(run.pid!, 'SIGSTOP');
  try {
    // Each attempt takes 0.4 s: the next one starts within that, with the coordinator frozen.
    await sleep(1000);
    expect(lines(starts).length, 'attempts started while the coordinator was frozen').toBeGreaterThanOrEqual(2);
  } finally {
    process.kill(run.pid!, 'SIGCONT');
  }
  const r = await run.result;
  expect(r.code, r.stderr).toBe(0);
  const attempts = await storedAttempts(dbPathIn(dir));
  expect(attempts.map((a) => a.outcome)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS']);
  expect(lines(starts).sort()).toEqual([...new Set(lines(starts))].sort()); // each ran once
  // Attempt rows say when each really started: one slot's attempts follow each other.
  const rows = attempts.map((a) => ({ s: a.startedAt, e: a.endedAt })).sort((a, b) => a.s - b.s);
  for (let i = 1; i < rows.length; i++) expect(rows[i]!.s - rows[i - 1]!.s, `attempt ${i + 1} started after attempt ${i}`).toBeGreaterThanOrEqual(350);
}

describe('a slot holds its next attempt', () => {
  it('an --exec slot starts its next command while the coordinator is frozen', async () => {
    const p = projectWithFiles(3);
    const starts = join(p.dir, 'starts');
    await frozenCoordinatorRunsNext(['run', 'src', '-j', '1', '--exec', `echo {} >> ${starts}; sleep 0.4`], p.dir, starts);
  }, 60_000);

  it("so does one whose commands start with Node's spawn (the same launcher interface)", async () => {
    const p = projectWithFiles(3);
    const starts = join(p.dir, 'starts');
    await frozenCoordinatorRunsNext(['run', 'src', '-j', '1', '--exec', `echo {} >> ${starts}; sleep 0.4`], p.dir, starts, { SPLITDANCE_SPAWNER: 'node' });
  }, 60_000);

  it('a module-handler worker starts its next attempt while the coordinator is frozen', async () => {
    const p = projectWithFiles(3);
    const starts = join(p.dir, 'starts');
    const handler = join(p.dir, 'slow.mjs');
    writeFileSync(
      handler,
      `import { appendFileSync } from 'node:fs';\nexport default async (task) => { appendFileSync(${JSON.stringify(starts)}, task.key + '\\n'); await new Promise((r) => setTimeout(r, 400)); };\n`,
    );
    await frozenCoordinatorRunsNext(['run', 'src', '-j', '1', '--handler', handler], p.dir, starts);
  }, 60_000);
});
