import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, handler, sleep } from '../helpers/cli.js';
import { mainIn, setProcessEnv } from '../helpers/in-process-cli.js';
import { childrenOf } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';

/**
 * What an attempt row says about how it ended when its process did not report: a worker killed
 * by a signal names that signal. The run is this process, so its workers (or spawner helpers)
 * are this process's children. (An attempt whose coordinator died: test/reliability/lost-attempt-end.test.ts.)
 */

interface Attempt {
  outcome: string | null;
  signal: string | null;
  error: string | null;
}

/** The task's attempts, as `show --json` gives them. */
async function attemptsOf(dir: string, key: string): Promise<Attempt[]> {
  const r = await mainIn(dir, ['show', key, '--json']);
  return r.code === 0 ? (JSON.parse(r.stdout) as { attempts: Attempt[] }).attempts : [];
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** This process's live children named `comm` (`node` for a forked worker, `spawner` for the helper). */
const workers = (comm: string) =>
  childrenOf(process.pid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === comm && readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0] !== 'Z';
    } catch {
      return false;
    }
  });

const SPAWNER_BUILT = existsSync(join(ROOT, 'dist/native/spawner'));

// Every way an attempt runs: a module handler in a forked worker, an --exec command through the
// coordinator's spawner helper (the helper is the worker), and through a forked worker's Node spawn.
const paths = [
  { name: 'a module handler', args: (_marker: string) => ['--handler', handler('slow')], env: {}, skip: false, worker: 'node' },
  { name: '--exec through the spawner helper', args: (marker: string) => ['--exec', `sleep ${marker}`], env: {}, skip: !SPAWNER_BUILT, worker: 'spawner' },
  { name: "--exec through Node's spawn", args: (marker: string) => ['--exec', `sleep ${marker}`], env: { SPLITDANCE_SPAWNER: 'node' }, skip: false, worker: 'node' },
];

describe.each(paths)('a worker SIGKILLed mid-attempt ($name)', ({ args, env, skip, worker }) => {
  // The launcher and the handler's sleep are read from this process's environment by what it forks.
  let restore = () => {};
  afterEach(() => restore());

  it.skipIf(skip)("records signal SIGKILL in its CRASHED attempt row (and show --json says so); the retry succeeds", async () => {
    const p = projectWithFiles(1);
    const marker = `1.${process.pid}${Math.floor(Math.random() * 1000)}`;
    restore = setProcessEnv({ SPLITDANCE_SPAWNER: undefined, ...env, SLEEP_MS: '1000', SD_MARK: p.dir });
    await attemptsOf(p.dir, p.keys[0]!); // loads `show` before the 1 s attempt starts (no store yet: none)
    const before = new Set(workers(worker));
    const run = mainIn(p.dir, ['run', 'src', ...args(marker), '--retries', '1', '--backoff', '10ms']);
    // The attempt is running once its row exists and its worker is up.
    let victims: number[] = [];
    await until(async () => {
      victims = workers(worker).filter((pid) => !before.has(pid));
      return victims.length > 0 && (await attemptsOf(p.dir, p.keys[0]!)).length === 1;
    }, 30_000, 'the attempt running');
    expect(victims).toHaveLength(1);
    process.kill(victims[0]!, 'SIGKILL');
    const r = await run;
    expect(r.code, r.stderr).toBe(0);
    const [crashed, retried] = await attemptsOf(p.dir, p.keys[0]!);
    expect(crashed).toMatchObject({ outcome: 'CRASHED', signal: 'SIGKILL' });
    expect(crashed!.error).toMatch(/killed by SIGKILL/);
    expect(retried).toMatchObject({ outcome: 'SUCCESS', signal: null });
  });
});
