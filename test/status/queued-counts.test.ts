import { describe, expect, it } from 'vitest';
import { sleep, waitFor } from '../helpers/cli.js';
import { mainIn, startIn } from '../helpers/in-process-cli.js';
import { runningTasks, waitUntil } from '../helpers/json-views.js';
import { projectWithFiles } from '../helpers/project.js';

/**
 * Attempts queued on a slot (SPEC §5) are `queued`, never `running`, in every count a person
 * or a script reads (SPEC §7): with -j 2 and slow tasks, each slot holds its running attempt
 * and the next one, so the store has 4 RUNNING tasks of which 2 run.
 */
describe('queued and running apart', () => {
  it('status --json, status and watch count 2 running and 2 queued on -j 2, not 4 running', async () => {
    const p = projectWithFiles(8);
    const run = startIn(p.dir, ['run', 'src', '--exec', 'sleep 6', '-j', '2', '--grace', '100ms']);
    let watch: ReturnType<typeof startIn> | undefined;
    try {
      await waitUntil(async () => (await runningTasks(p.dir)) === 4, 30_000, 'two running and two queued attempts');
      const json = await mainIn(p.dir, ['status', '--json']);
      expect(json.code).toBe(3);
      const s = JSON.parse(json.stdout) as Record<string, number>;
      expect(s).toMatchObject({ total: 8, running: 2, queued: 2, pending: 4 });

      const human = await mainIn(p.dir, ['status']);
      expect(human.stdout).toContain('2 running, 2 queued');

      // Its first line is the look taken now; it goes on (every second) until the Ctrl-C at the end.
      watch = startIn(p.dir, ['watch', '--interval', '1s']);
      await waitFor(() => watch!.stdout().includes('\n'), 20_000, "watch's first line");
      expect(watch.stdout().split('\n')[0]).toContain('2 running, 2 queued');

      // The first two end; the two that waited start, and the store hears of it: running again.
      let next: Record<string, number> = {};
      // A look every 50 ms: back to back, they would keep the run in this process from hearing its workers.
      const look = async () => {
        await sleep(50);
        next = JSON.parse((await mainIn(p.dir, ['status', '--json'])).stdout) as Record<string, number>;
      };
      for (await look(); next.succeeded! < 2; await look()) expect(next.running).toBeLessThanOrEqual(2);
      expect(next.succeeded).toBe(2); // still in the second round: each task takes 6 s
      for (const end = Date.now() + 5000; next.running !== 2 && Date.now() < end; ) await look();
      expect(next).toMatchObject({ succeeded: 2, running: 2, queued: 2 });
    } finally {
      // Ctrl-C to the run and the watch, both in this process: process.emit calls their signal handlers as SIGINT would.
      process.emit('SIGINT');
      await run.done;
      await watch?.done;
    }
  }, 60_000);
});
