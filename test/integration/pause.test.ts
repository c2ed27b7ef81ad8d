import { describe, expect, it } from 'vitest';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query, runningCount } from '../helpers/store.js';

describe('pause and resume', () => {
  it('pause stops claiming (running attempts finish, exit 3); a paused batch is left alone until resumed', async () => {
    const p = projectWithFiles(30);
    const db = dbPathIn(p.dir);
    const child = startCli(['run', 'src', '--exec', 'sleep 0.3', '-j', '2'], { cwd: p.dir });
    await waitFor(() => runningCount(db) === 2, 20_000, 'two running attempts');
    const paused = await runCli(['pause'], { cwd: p.dir });
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stderr).toMatch(/paused: running attempts finish/);
    const r = await child.result;
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/paused \(`splitdance resume` to continue\)/);
    expect(runningCount(db)).toBe(0);
    expect(query(db, "SELECT 1 FROM attempts WHERE outcome != 'SUCCESS'")).toEqual([]);
    const attempts = () => query<{ n: number }>(db, 'SELECT count(*) AS n FROM attempts')[0]!.n;
    const before = attempts();
    expect(before).toBeLessThan(30);

    const whilePaused = await runCli(['run', 'src'], { cwd: p.dir });
    expect(whilePaused.code).toBe(3);
    expect(attempts()).toBe(before); // nothing was claimed
    const worker = await runCli(['worker'], { cwd: p.dir });
    expect(worker.stderr).toMatch(/no batch in the store has work left/); // paused batches are skipped

    expect((await runCli(['resume'], { cwd: p.dir })).code).toBe(0);
    const finished = await runCli(['run', 'src'], { cwd: p.dir });
    expect(finished.code, finished.stderr).toBe(0);
    expect(query(db, "SELECT 1 FROM tasks WHERE status != 'SUCCESS'")).toEqual([]);
    expect(attempts()).toBe(30);
  });
});
