import { describe, expect, it } from 'vitest';
import { sleep, startCli, waitFor } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { runInPty } from '../helpers/pty.js';

/** The first line `watch` prints through a pipe (then it is stopped). */
async function watchLine(cwd: string): Promise<string> {
  const watch = startCli(['watch', '--interval', '1h'], { cwd });
  let out = '';
  watch.stdout!.on('data', (b) => (out += b));
  await waitFor(() => out.includes('\n'), 20_000, "watch's first line");
  watch.kill('SIGINT');
  await watch.result;
  return out.split('\n')[0]!;
}

/**
 * How many tasks are held by a run (running, or queued on a slot), as `status --json` counts
 * them; 0 while the run is still making its store (no file, an empty one: exit 4) or its batch
 * (a store with no batch yet: exit 2).
 */
async function running(dir: string): Promise<number> {
  const r = await mainIn(dir, ['status', '--json']);
  if (r.code === 4 || r.code === 2) {
    expect(r.stderr).toMatch(/no store at|holds no splitdance store yet|holds no batch yet/);
    return 0;
  }
  const s = JSON.parse(r.stdout) as { running: number; queued: number };
  return s.running + s.queued;
}

/**
 * The run is a CLI process, stopped and killed by signals; what is asked of the store runs in this process.
 *
 * After the run is stopped (SIGSTOP) or killed (SIGKILL), `status` says who holds the RUNNING
 * tasks (SPEC §7): a stopped coordinator keeps them while it exists; a dead one's are taken
 * back by the next start.
 */
describe('status and watch name stopped and dead owners', () => {
  it('a SIGSTOPped run is shown stopped, and after kill -9 its tasks are shown held by a dead coordinator', async () => {
    const p = projectWithFiles(4);
    const run = startCli(['run', 'src', '--exec', 'sleep 30', '-j', '2'], { cwd: p.dir });
    const pid = run.pid!;
    try {
      for (const end = Date.now() + 30_000; (await running(p.dir)) !== 4; await sleep(20)) if (Date.now() > end) throw new Error('timed out waiting for four RUNNING tasks');
      process.kill(pid, 'SIGSTOP');
      const stopped = await mainIn(p.dir, ['status']);
      expect(stopped.code).toBe(3);
      expect(stopped.stdout).toContain(`4 tasks held by a stopped coordinator (pid ${pid} on this machine, SIGSTOP or Ctrl-Z): \`kill -CONT ${pid}\` lets it go on`);
      const json = JSON.parse((await mainIn(p.dir, ['status', '--json'])).stdout);
      expect(json.owners).toEqual([{ owner: expect.stringContaining(`:${pid}:`), pid, state: 'stopped', tasks: 4 }]);
      expect(await watchLine(p.dir)).toContain(`; 4 tasks held by a stopped coordinator (pid ${pid} on this machine)`);

      process.kill(pid, 'SIGKILL');
      await run.result;
      const dead = await mainIn(p.dir, ['status']);
      expect(dead.code).toBe(3);
      expect(dead.stdout).toMatch(new RegExp(`4 tasks held by a dead coordinator \\(pid ${pid} on this machine\\): the next \`splitdance run .*\` or \`splitdance worker.*\` takes them back`));
      expect(JSON.parse((await mainIn(p.dir, ['status', '--json'])).stdout).owners).toMatchObject([{ pid, state: 'dead', tasks: 4 }]);
      expect(await watchLine(p.dir)).toContain(`; 4 tasks held by a dead coordinator (pid ${pid} on this machine)`);
      const frame = await runInPty(['watch', '--interval', '1h'], { cwd: p.dir, type: { when: (o) => o.includes('held by a dead'), text: 'q' } });
      expect(frame.output).toContain(`  4 tasks held by a dead coordinator (pid ${pid} on this machine): the next run`); // cut to the terminal width

      // And it is so: the next start takes them back (LOST) and finishes.
      const again = await mainIn(p.dir, ['run', 'src', '--exec', 'true']);
      expect(again.code, again.stderr).toBe(0);
      expect(JSON.parse((await mainIn(p.dir, ['status', '--json'])).stdout).owners).toEqual([]);
    } finally {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }, 60_000);
});
