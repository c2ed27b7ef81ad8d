import { describe, expect, it } from 'vitest';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, runningCount } from '../helpers/store.js';

/**
 * Attempts queued on a slot (SPEC §5) are `queued`, never `running`, in every count a person
 * or a script reads (SPEC §7): with -j 2 and slow tasks, each slot holds its running attempt
 * and the next one, so the store has 4 RUNNING tasks of which 2 run.
 */
describe('queued and running apart', () => {
  it('status --json, status and watch count 2 running and 2 queued on -j 2, not 4 running', async () => {
    const p = projectWithFiles(8);
    const run = startCli(['run', 'src', '--exec', 'sleep 6', '-j', '2', '--grace', '100ms'], { cwd: p.dir });
    try {
      const db = dbPathIn(p.dir);
      await waitFor(() => runningCount(db) === 4, 30_000, 'two running and two queued attempts');
      const json = await runCli(['status', '--json'], { cwd: p.dir });
      expect(json.code).toBe(3);
      const s = JSON.parse(json.stdout) as Record<string, number>;
      expect(s).toMatchObject({ total: 8, running: 2, queued: 2, pending: 4 });

      const human = await runCli(['status'], { cwd: p.dir });
      expect(human.stdout).toContain('2 running, 2 queued');

      const watch = startCli(['watch', '--interval', '1h'], { cwd: p.dir });
      let first = '';
      watch.stdout!.on('data', (b) => (first ||= String(b)));
      await waitFor(() => first.includes('\n'), 20_000, "watch's first line");
      watch.kill('SIGINT');
      await watch.result;
      expect(first).toContain('2 running, 2 queued');

      // The first two end; the two that waited start, and the store hears of it: running again.
      let next: Record<string, number> = {};
      const look = async () => (next = JSON.parse((await runCli(['status', '--json'], { cwd: p.dir })).stdout) as Record<string, number>);
      for (await look(); next.succeeded! < 2; await look()) expect(next.running).toBeLessThanOrEqual(2);
      expect(next.succeeded).toBe(2); // still in the second round: each task takes 6 s
      for (const end = Date.now() + 5000; next.running !== 2 && Date.now() < end; ) await look();
      expect(next).toMatchObject({ succeeded: 2, running: 2, queued: 2 });
    } finally {
      run.kill('SIGINT');
      await run.result;
    }
  }, 60_000);
});
