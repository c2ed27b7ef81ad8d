import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES, handler, runCli, startCli, waitFor } from '../helpers/cli.js';
import { memoryCgroup } from '../helpers/memory-cgroup.js';
import { childrenOf, processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';

// RELIABILITY R42: under memory pressure the kernel's OOM killer takes what a run started
// (commands, module workers) before the coordinator and its spawner helpers, and an attempt
// it killed is recorded as "killed: out of memory".

/** Holds `mib` MiB until `dir`/marks has `count` lines, one a holder, or `counter` counts an OOM kill (fixtures/commands/hold-memory.sh). */
const hold = (mib: number, count: number, dir: string, counter = '') => `sh ${join(FIXTURES, 'commands/hold-memory.sh')} ${mib} ${count} ${dir} ${counter}`.trimEnd();
const marks = (dir: string) => (existsSync(join(dir, 'marks')) ? readFileSync(join(dir, 'marks'), 'utf8').split('\n').length - 1 : 0);
/** Lets every holder waiting on `dir` go. */
const release = (dir: string, count: number) => appendFileSync(join(dir, 'marks'), 'released\n'.repeat(count));
/** A process's oom_score_adj; null once it is gone (a holder's `sleep` comes and goes). */
const oomScore = (pid: number) => {
  try {
    return Number(readFileSync(`/proc/${pid}/oom_score_adj`, 'utf8'));
  } catch {
    return null;
  }
};
const own = oomScore(process.pid);

/**
 * Once two holders of `dir` hold, `look` at the run's processes; then lets them go (also when a
 * look fails, so nothing is left waiting) and gives the run's exit code.
 */
async function whileHolding(run: ReturnType<typeof startCli>, dir: string, look: () => void): Promise<number | null> {
  try {
    await waitFor(() => marks(dir) === 2, 20_000, 'both holders to hold their memory');
    look();
  } finally {
    release(dir, 99);
  }
  return (await run.result).code;
}

describe('R42: the OOM killer’s order', () => {
  it('--exec: commands get oom_score_adj 1000; the coordinator and its spawner helpers keep theirs', async () => {
    const p = projectWithFiles(2);
    const run = startCli(['run', 'src', '--exec', hold(1, 99, p.dir), '-j', '2'], { cwd: p.dir, env: { SD_TEST_MARK: p.dir } });
    const code = await whileHolding(run, p.dir, () => {
      const helpers = childrenOf(run.pid!);
      const commands = processesWithEnv(p.dir).filter((pid) => pid !== run.pid && !helpers.includes(pid));
      expect(oomScore(run.pid!)).toBe(own);
      expect(helpers.length).toBeGreaterThan(0);
      // The spawner helpers run in the coordinator; without them (no C compiler) commands are its children.
      for (const pid of helpers) expect(oomScore(pid)).toBe(readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'spawner' ? own : 1000);
      const scores = commands.map(oomScore).filter((s) => s !== null);
      expect(scores.length).toBeGreaterThanOrEqual(2);
      expect(new Set(scores)).toEqual(new Set([1000]));
    });
    expect(code).toBe(0);
  });

  it('module handlers: workers and what they start get oom_score_adj 1000; the coordinator keeps its own', async () => {
    const p = projectWithFiles(2);
    const run = startCli(['run', 'src', '--handler', handler('spawn-child'), '-j', '2'], {
      cwd: p.dir,
      env: { SD_TEST_MARK: p.dir, CHILD_SCRIPT: hold(1, 99, p.dir) },
    });
    const code = await whileHolding(run, p.dir, () => {
      const workers = childrenOf(run.pid!);
      const started = processesWithEnv(p.dir).filter((pid) => pid !== run.pid && !workers.includes(pid));
      expect(oomScore(run.pid!)).toBe(own);
      expect(workers.map(oomScore)).toEqual([1000, 1000]);
      const scores = started.map(oomScore).filter((s) => s !== null);
      expect(scores.length).toBeGreaterThanOrEqual(2);
      expect(new Set(scores)).toEqual(new Set([1000]));
    });
    expect(code).toBe(0);
  });
});

const LIMIT = 90 * 2 ** 20;
const probe = memoryCgroup(LIMIT);
await probe?.remove();
if (!probe) console.warn('skipping the memory cgroup test of R42: no memory cgroup can be made here (run as root where cgroup v1 memory or v2 memory.max is available)');

describe('R42: -j commands that need more memory than the cgroup has', () => {
  it.skipIf(!probe)('the kernel kills commands, never the coordinator; their attempts say "killed: out of memory" and are retried', async () => {
    const cgroup = memoryCgroup(LIMIT)!;
    try {
      const p = projectWithFiles(6);
      // Six holders of 16 MiB (about 17 MiB each) and their coordinator took 126 MiB here
      // unlimited: in 90 MiB none ends until the OOM killer has acted. The coordinator (about
      // 60 MiB resident) is the biggest process of the cgroup: the kernel's own order takes it.
      const run = startCli(['run', 'src', '--exec', hold(16, 6, p.dir, cgroup.events), '-j', '6', '--retries', '8', '--backoff', '100ms', '--quiet'], {
        cwd: p.dir,
        under: ['sh', '-c', `echo $$ > ${cgroup.procs} && exec "$@"`, 'sh'],
      });
      const r = await run.result;
      expect(r.signal, r.stderr).toBeNull();
      expect(r.code, r.stderr).toBe(0);
      expect(cgroup.oomKills()).toBeGreaterThan(0);

      const shown = await Promise.all(p.keys.map(async (k) => JSON.parse((await runCli(['show', k, '--json'], { cwd: p.dir })).stdout)));
      const failed = shown.flatMap((t: { attempts: { outcome: string; signal: string | null; error: string | null }[] }) => t.attempts.filter((a) => a.outcome !== 'SUCCESS'));
      // Every kill was the OOM killer's, and each is recorded so (the kernel's count may hold
      // more: a holder's own short-lived children are taken now and then).
      expect(failed.length).toBeGreaterThan(0);
      expect(failed.length).toBeLessThanOrEqual(cgroup.oomKills());
      // A simple command's SIGKILL is reported as a shell would, exit code 137.
      for (const a of failed) expect(a).toMatchObject({ outcome: 'FAILED', error: expect.stringMatching(/^killed: out of memory/) });
      const human = await runCli(['show', shown.find((t) => t.attempts.length > 1).key], { cwd: p.dir });
      expect(human.stdout).toMatch(/error: killed: out of memory/);
    } finally {
      await cgroup.remove();
    }
  });
});
