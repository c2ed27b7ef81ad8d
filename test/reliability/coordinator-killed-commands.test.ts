import { describe, it } from 'vitest';
import { startCli, waitFor } from '../helpers/cli.js';
import { liveProcesses, processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';

// `--exec` commands start through the spawner helper when it is built, else with Node's spawn
// (SPLITDANCE_SPAWNER=node): either way a coordinator killed outright (SIGKILL, so nothing of
// its own runs) leaves none of its commands behind. The in-process half is test/worker/spawner.test.ts.

/** Live `sleep MARKER` commands (not the coordinator, whose arguments name them too). */
const sleeping = (marker: string) => liveProcesses(`sleep ${marker}`).filter((l) => /^\s*\d+\s+\S+\s+sleep /.test(l)).length;

/** The environment as it is (the default launcher). */
const noEnv: Record<string, string> = {};
const modes = [
  { name: 'spawner helper', env: noEnv },
  { name: "Node's spawn", env: { SPLITDANCE_SPAWNER: 'node' } },
];

describe.each(modes)('--exec through the $name', ({ env }) => {
  it('a SIGKILLed coordinator leaves no command running', async () => {
    const p = projectWithFiles(4);
    const marker = `1000.${process.pid}8`;
    const run = startCli(['run', 'src', '--exec', `sleep ${marker}`, '-j', '2'], { cwd: p.dir, env: { ...env, SD_MARK: p.dir } });
    await waitFor(() => sleeping(marker) === 2, 10_000, 'two commands running');
    run.kill('SIGKILL');
    await run.result;
    await waitFor(() => sleeping(marker) === 0 && processesWithEnv(p.dir).length === 0, 5000, 'no survivor');
  });
});
