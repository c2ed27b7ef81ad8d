import { describe, expect, it } from 'vitest';
import { startCli } from '../helpers/cli.js';
import { allAttempts, statusCounts, storedTasks, waitUntil } from '../helpers/json-views.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn } from '../helpers/store.js';

// SPEC §5: a --grace longer than a Node timer takes (24.8 days) works as written when the
// run's process is signalled (the other long durations: test/run/long-durations.test.ts).
describe('durations longer than Node timers take (24.8 days) work as written', () => {
  it('SIGTERM with --grace 25d lets a running 1 s task finish, then exits 143', async () => {
    const p = projectWithFiles(1);
    const child = startCli(['run', 'src', '--exec', 'sleep 1', '--grace', '25d'], { cwd: p.dir });
    await waitUntil(async () => (await storedTasks(dbPathIn(p.dir))).some((t) => t.status === 'RUNNING'), 20_000, 'a running attempt');
    child.kill('SIGTERM');
    const r = await child.result;
    expect(r.code, r.stderr).toBe(143);
    expect(r.stderr).not.toMatch(/TimeoutOverflowWarning/);
    expect(Object.keys(await statusCounts(p.dir))).toEqual(['SUCCESS']);
    expect([...new Set((await allAttempts(p.dir)).map((a) => a.outcome))]).toEqual(['SUCCESS']);
  });
});
