import { describe, expect, it } from 'vitest';
import { handler, runCli, startCli, waitFor } from '../helpers/cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { logEntries } from '../helpers/store.js';
import { modes, overlaps, recordingProject } from '../helpers/attempt-overlaps.js';

// Every process an attempt starts must be gone when the attempt is recorded as over: here when
// the CLI process is stopped (SIGTERM: a shutdown) or killed (SIGKILL); timeouts, successes and
// crashed workers are tested in-process in test/worker/attempt-groups.test.ts. What
// outlives its attempt could run beside the task's next attempt, so each test keeps a
// side-effect log of starts and ends and checks that the attempts of one key never overlap.

/** The outcomes of the one task's attempts, as `show --json` gives them. */
const outcomes = async (dir: string) => (JSON.parse((await mainIn(dir, ['show', 'f000.log', '--json'])).stdout).attempts as { outcome: string }[]).map((a) => a.outcome);

// The command's shell dies of the TERM; its child ignores TERM (inherited `trap '' TERM`).
const IGNORES_TERM = (script: string, seconds: number) => `sh -c 'trap "" TERM; ${script} ${seconds}' & wait`;

describe.each(modes)('process groups through the $name', ({ env }) => {
  it('shutdown: after the grace, a child ignoring SIGTERM is killed; nothing outlives the run', async () => {
    const p = recordingProject(1);
    const run = startCli(['run', 'src', '--exec', IGNORES_TERM(p.script, 6), '--grace', '200ms'], { cwd: p.dir, env: { ...env, ...p.env } });
    await waitFor(() => logEntries(p.log).length === 1, 10_000, 'the attempt to start');
    run.kill('SIGTERM');
    const r = await run.result;
    expect(r.code, r.stderr).toBe(143);
    expect(r.stderr).toMatch(/then SIGKILL/);
    expect(await outcomes(p.dir)).toEqual(['INTERRUPTED']);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 1000, 'nothing of the run alive after it exits');
    expect(logEntries(p.log).filter((e) => e.type === 'end')).toEqual([]);
  });

});

describe('a module handler\'s child processes', () => {
  it('are killed when the coordinator is SIGKILLed (within 1 s); the next run never runs the task beside them', async () => {
    const p = recordingProject(1);
    const env = { ...p.env, CHILD_SCRIPT: `${p.script} 4` };
    const args = ['run', 'src', '--handler', handler('spawn-child'), '--retries', '3'];
    const run = startCli(args, { cwd: p.dir, env });
    await waitFor(() => logEntries(p.log).length === 1, 10_000, 'the child to start');
    run.kill('SIGKILL');
    await run.result;
    await waitFor(() => processesWithEnv(p.dir).length === 0, 1000, 'the worker and its handler\'s child gone');
    const again = await runCli(args, { cwd: p.dir, env });
    expect(again.code, again.stderr).toBe(0);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 1000, 'nothing of the run alive after it exits');
    const entries = logEntries(p.log);
    expect(entries.filter((e) => e.type === 'end')).toHaveLength(1); // only the second run's
    expect(overlaps(entries)).toEqual([]);
  });

});
