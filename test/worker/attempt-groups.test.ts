import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { handler, waitFor } from '../helpers/cli.js';
import { mainIn, setProcessEnv } from '../helpers/in-process-cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { logEntries } from '../helpers/store.js';
import { modes, overlaps, recordingProject } from '../helpers/attempt-overlaps.js';

// Every process an attempt starts must be gone when the attempt is recorded as over: a
// timeout, a success that left `cmd &` behind, a crashed worker (a shutdown and a coordinator
// SIGKILL, which need the CLI as a process: test/reliability/attempt-groups.test.ts). What
// outlives its attempt could run beside the task's next attempt, so each test keeps a
// side-effect log of starts and ends and checks that the attempts of one key never overlap.

/** Each task's attempts (`show --json`), the tasks in key order. */
async function attemptsByKey(dir: string): Promise<{ outcome: string; startedAt: string }[][]> {
  const tasks = JSON.parse((await mainIn(dir, ['tasks', '--json'])).stdout) as { key: string }[];
  return Promise.all(tasks.map(async (t) => JSON.parse((await mainIn(dir, ['show', t.key, '--json'])).stdout).attempts));
}

const outcomes = async (dir: string) => (await attemptsByKey(dir)).flat().map((a) => a.outcome);

/**
 * The run is this process: its workers inherit this process's environment, so a test's
 * variables (the side-effect log, the launcher) are set here and put back after it.
 */
let restoreEnv = () => {};
afterEach(() => restoreEnv());

function runIn(dir: string, argv: string[], env: Record<string, string>) {
  restoreEnv = setProcessEnv({ SPLITDANCE_SPAWNER: undefined, ...env });
  return mainIn(dir, argv);
}

// The command's shell dies of the TERM; its child ignores TERM (inherited `trap '' TERM`).
const IGNORES_TERM = (script: string, seconds: number) => `sh -c 'trap "" TERM; ${script} ${seconds}' & wait`;

describe.each(modes)('process groups through the $name', ({ env }) => {
  it('--timeout: a child ignoring SIGTERM gets SIGKILL after the grace, and the next attempt starts only after it is gone', async () => {
    const p = recordingProject(1);
    const r = await runIn(p.dir, ['run', 'src', '--exec', IGNORES_TERM(p.script, 5), '--timeout', '500ms', '--retries', '1', '--backoff', '10ms'], { ...env, ...p.env });
    expect(r.code, r.stderr).toBe(1);
    expect(await outcomes(p.dir)).toEqual(['TIMEOUT', 'TIMEOUT']);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 1000, 'nothing of the run alive after it exits');
    const entries = logEntries(p.log);
    expect(entries.filter((e) => e.type === 'start')).toHaveLength(2);
    expect(entries.filter((e) => e.type === 'end')).toEqual([]); // both were killed, 2 s after their TERM
    expect(overlaps(entries)).toEqual([]);
  });

  it('a successful attempt that left `cmd &` running: it is stopped before the attempt is recorded', async () => {
    const p = recordingProject(2);
    // The command returns once its background child has logged its start (so the child is
    // surely running when the attempt ends, however loaded the machine is).
    const started = `until grep -q "\\"key\\":\\"$SPLITDANCE_KEY\\"" "$SIDE_EFFECT_LOG" 2>/dev/null; do sleep 0.02; done`;
    const r = await runIn(p.dir, ['run', 'src', '--exec', `${p.script} 30 & ${started}; echo started`], { ...env, ...p.env });
    expect(r.code, r.stderr).toBe(0);
    expect(await outcomes(p.dir)).toEqual(['SUCCESS', 'SUCCESS']);
    expect(processesWithEnv(p.dir)).toEqual([]); // gone by the time the run has exited
    expect(logEntries(p.log).filter((e) => e.type === 'start')).toHaveLength(2);
  });
});

describe('a module handler\'s child processes', () => {
  it('outlive a timed-out attempt whose handler gave up only until they end: the next attempt starts after them', async () => {
    const p = recordingProject(1);
    // The child ignores the TERM its attempt's end sends and finishes before the KILL would come (2 s).
    const env = { ...p.env, CHILD_SCRIPT: `trap "" TERM; ${p.script} 1.5` };
    const args = ['run', 'src', '--handler', handler('spawn-child'), '--timeout', '1s', '--retries', '2', '--backoff', '10ms'];
    const r = await runIn(p.dir, args, env);
    expect(r.code, r.stderr).toBe(1);
    expect(await outcomes(p.dir)).toEqual(['TIMEOUT', 'TIMEOUT', 'TIMEOUT']);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 1000, 'nothing of the run alive after it exits');
    const entries = logEntries(p.log);
    expect(entries.filter((e) => e.type === 'start')).toHaveLength(3);
    expect(overlaps(entries)).toEqual([]);
  });

  it('left running by a successful attempt are stopped before the worker starts its next attempt', async () => {
    const p = recordingProject(2);
    const stops = join(p.dir, 'stops.txt');
    // Each child notes when its TERM came, then exits; the handler succeeds as soon as it started.
    const script = `trap 'echo "$SPLITDANCE_KEY $(date +%s%3N)" >> ${stops}; exit 0' TERM; sleep 30 & wait`;
    const env = { ...p.env, CHILD_SCRIPT: script, RESOLVE_AT_ONCE: '1' };
    const r = await runIn(p.dir, ['run', 'src', '--handler', handler('spawn-child'), '-j', '1'], env);
    expect(r.code, r.stderr).toBe(0);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 3000, 'nothing of the run alive after it exits');
    const stoppedAt = new Map(readFileSync(stops, 'utf8').trim().split('\n').map((l) => l.split(' ') as [string, string]).map(([k, t]) => [k, Number(t)]));
    const second = (await attemptsByKey(p.dir))[1]![0]!; // f001.log's attempt
    // Stopped when its own attempt ended, not when the worker did (after the second attempt).
    expect(stoppedAt.get('f000.log')).toBeLessThanOrEqual(Date.parse(second.startedAt));
  });

  it('die with a worker that crashes: the retry never runs beside them', async () => {
    const p = recordingProject(1);
    const env = { ...p.env, CHILD_SCRIPT: `${p.script} 1.5`, EXIT_WORKER_MS: '300' };
    const r = await runIn(p.dir, ['run', 'src', '--handler', handler('spawn-child'), '--retries', '1', '--backoff', '10ms'], env);
    expect(r.code, r.stderr).toBe(1);
    expect(await outcomes(p.dir)).toEqual(['CRASHED', 'CRASHED']);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 3000, 'nothing of the run alive after it exits');
    const entries = logEntries(p.log);
    expect(entries.filter((e) => e.type === 'start')).toHaveLength(2);
    expect(entries.filter((e) => e.type === 'end')).toEqual([]); // killed with their workers
    expect(overlaps(entries)).toEqual([]);
  });
});
