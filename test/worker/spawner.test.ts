import { chmodSync, existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { logRange } from '../../src/store/log-layout.js';
import { ROOT, waitFor } from '../helpers/cli.js';
import { mainIn, setProcessEnv } from '../helpers/in-process-cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { missing } from '../helpers/services.js';
import { dbPathIn, storedAttempts } from '../helpers/store.js';
import { sleeping } from '../helpers/procs.js';

/** Every attempt of every batch in the store, oldest first, through the store's own verb. */
async function attempts(dir: string) {
  const all = [];
  for (const b of await storedBatchNames(dir)) all.push(...(await storedAttempts(dbPathIn(dir), b)));
  return all
    .sort((x, y) => x.id - y.id)
    .map((a) => ({ key: a.key, outcome: a.outcome, exit_code: a.exitCode, signal: a.signal, error: a.error, output_tail: a.outputTail, log_path: a.logPath }));
}

/** The batches in the store (a test that runs two batches reads both). */
async function storedBatchNames(dir: string): Promise<string[]> {
  const r = await mainIn(dir, ['batches', '--json']);
  return (JSON.parse(r.stdout) as { name: string }[]).map((b) => b.name);
}

/** SPLITDANCE_SPAWNER (the launcher) and SD_MARK (to find a run's processes by): this process's environment, which the workers and the helper inherit; put back after each test. */
let restoreEnv = () => {};
afterEach(() => restoreEnv());

const SPAWNER_BUILT = existsSync(join(ROOT, 'dist/native/spawner'));

// `--exec` commands start through the spawner helper when it is built, else with Node's
// spawn (SPLITDANCE_SPAWNER=node); both must behave the same in every observable way.
/** The environment as it is (the default launcher). */
const noEnv: Record<string, string> = {};
const modes = [
  { name: 'spawner helper', env: noEnv, parent: 'spawner' },
  { name: "Node's spawn", env: { SPLITDANCE_SPAWNER: 'node' }, parent: 'node' },
];

describe('the spawner helper is built', () => {
  it.skipIf(missing('cc', 'the spawner helper tests'))('by npm run build (a C compiler is present here)', () => {
    expect(SPAWNER_BUILT).toBe(true);
  });
});

describe.each(modes)('--exec through the $name', ({ env, parent }) => {
  beforeEach(() => {
    restoreEnv = setProcessEnv({ SPLITDANCE_SPAWNER: env.SPLITDANCE_SPAWNER });
  });

  it('starts commands from the expected process', async () => {
    const p = projectWithFiles(1);
    const run = await mainIn(p.dir, ['run', 'src', '--exec', 'cat /proc/$PPID/comm; cut -d" " -f4 /proc/$PPID/stat']);
    expect(run.code).toBe(0);
    const [comm, grandparent] = (await attempts(p.dir))[0]!.output_tail!.trim().split('\n');
    expect(comm).toBe(parent);
    // The helper of an --exec batch is the coordinator's own child (here this process): no worker process in between.
    expect(Number(grandparent)).toBe(process.pid);
  });

  it('captures stdout and stderr into a log only when there is output, and keeps the exit code', async () => {
    const p = projectWithFiles(2);
    const template = 'case {/} in f000.log) printf "out\\n"; printf "err\\n" >&2; exit 3;; esac';
    const r = await mainIn(p.dir, ['run', 'src', '--exec', template, '--retries', '0']);
    expect(r.code).toBe(1);
    const [loud, quiet] = [(await attempts(p.dir)).find((a) => a.key === 'f000.log')!, (await attempts(p.dir)).find((a) => a.key === 'f001.log')!];
    expect(loud).toMatchObject({ outcome: 'FAILED', exit_code: 3, signal: null, output_tail: 'out\nerr\n' });
    expect(loud.error).toBe('exit code 3: err');
    const log = logRange(loud.log_path!);
    expect(readFileSync(log.path).subarray(log.offset, log.offset + log.length!).toString('utf8')).toBe('out\nerr\n');
    expect(quiet).toMatchObject({ outcome: 'SUCCESS', exit_code: 0, output_tail: null, log_path: null });
    const logDir = join(p.dir, '.splitdance', 'logs');
    const files = readdirSync(logDir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    expect(files.map((f) => f.name)).toHaveLength(1); // the silent task left no file
  });

  it('runs a simple command directly with the task variables, as /bin/sh -c would', async () => {
    const p = projectWithFiles(2);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'printenv SPLITDANCE_KEY SPLITDANCE_ATTEMPT']);
    expect(r.code).toBe(0);
    expect((await attempts(p.dir)).map((a) => a.output_tail).sort()).toEqual(['f000.log\n1\n', 'f001.log\n1\n']);
  });

  it('reports a missing command as the shell does: exit 127, "not found"', async () => {
    const p = projectWithFiles(1);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'no-such-command-sd {}', '--retries', '0']);
    expect(r.code).toBe(1);
    const a = (await attempts(p.dir))[0]!;
    expect(a.exit_code).toBe(127);
    expect(a.output_tail).toMatch(/no-such-command-sd: .*not found/);
  });

  it('reports a command killed by its own signal as the shell does: exit 128+n', async () => {
    const p = projectWithFiles(1);
    const script = join(p.dir, 'segv.sh');
    writeFileSync(script, '#!/bin/sh\nkill -SEGV $$\n');
    chmodSync(script, 0o755);
    for (const template of [`${script} {}`, `: ; ${script} {}`]) {
      const r = await mainIn(p.dir, ['run', 'src', '--exec', template, '--retries', '0', '--batch', template.length.toString()]);
      expect(r.code).toBe(1);
    }
    expect((await attempts(p.dir)).map((a) => [a.exit_code, a.signal])).toEqual([
      [139, null],
      [139, null],
    ]);
  });

  it('a timeout kills a directly run command and its group', async () => {
    const p = projectWithFiles(1);
    const marker = `1000.${process.pid}7`;
    const r = await mainIn(p.dir, ['run', 'src', '--exec', `sleep ${marker}`, '--timeout', '400ms', '--retries', '0']);
    expect(r.code).toBe(1);
    expect((await attempts(p.dir))[0]).toMatchObject({ outcome: 'TIMEOUT', signal: 'SIGTERM' });
    await waitFor(() => sleeping(marker) === 0, 2000, 'no sleep survivor');
  });
});

describe.skipIf(!SPAWNER_BUILT)('when the spawner helper dies', () => {
  const helperOf = (mark: string) => processesWithEnv(mark).find((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'spawner');

  it('in an --exec batch its worker has died: the attempt is CRASHED and retried; its command does not survive', async () => {
    const p = projectWithFiles(1);
    const marker = `1.${process.pid}9`;
    restoreEnv = setProcessEnv({ SD_MARK: p.dir, SPLITDANCE_SPAWNER: undefined });
    const run = mainIn(p.dir, ['run', 'src', '--exec', `sleep ${marker}`, '--retries', '1', '--backoff', '10ms']);
    await waitFor(() => sleeping(marker) === 1, 10_000, 'the command running');
    process.kill(helperOf(p.dir)!, 'SIGKILL');
    const r = await run;
    expect(r.code, r.stderr).toBe(0);
    const rows = await attempts(p.dir);
    expect(rows.map((a) => a.outcome)).toEqual(['CRASHED', 'SUCCESS']);
    expect(rows[0]).toMatchObject({ signal: 'SIGKILL', error: expect.stringMatching(/worker killed by SIGKILL/) });
    await waitFor(() => sleeping(marker) === 0, 2000, 'no sleep survivor');
  });

  it('in a worker process (a stage batch with a module stage) it means the same: the worker has died, the attempt is CRASHED and retried', async () => {
    const p = projectWithFiles(1);
    const marker = `1.${process.pid}6`;
    writeFileSync(
      join(p.dir, 'splitdance.json'),
      JSON.stringify({
        source: 'src',
        retries: 1,
        backoff: '10ms',
        stages: [
          { name: 'first', handler: join(ROOT, 'fixtures/handlers/ok.mjs') },
          { name: 'second', needs: ['first'], exec: `sleep ${marker}` },
        ],
      }),
    );
    restoreEnv = setProcessEnv({ SD_MARK: p.dir, SPLITDANCE_SPAWNER: undefined });
    const run = mainIn(p.dir, ['run', '-j', '1']);
    await waitFor(() => sleeping(marker) === 1, 10_000, 'the command running');
    process.kill(helperOf(p.dir)!, 'SIGKILL');
    const r = await run;
    expect(r.code, r.stderr).toBe(0);
    const second = (await attempts(p.dir)).filter((a) => a.key.startsWith('second/'));
    expect(second.map((a) => a.outcome)).toEqual(['CRASHED', 'SUCCESS']);
    expect(second[0]).toMatchObject({ signal: 'SIGKILL', error: expect.stringMatching(/worker killed by SIGKILL: its spawner helper was killed by SIGKILL/) });
    await waitFor(() => sleeping(marker) === 0, 2000, 'no sleep survivor');
  });
});

describe('a NUL byte in a command line', () => {
  it('fails the attempt for good and runs nothing (it could otherwise forge a request to the helper)', async () => {
    const p = projectWithFiles(1);
    const forged = join(p.dir, 'forged');
    // A result whose value, NUL-separated, reads as a whole extra request to the helper.
    const title = ['x', '0', '999', join(p.dir, 'l'), '3', '/bin/sh', '-c', `touch ${forged}`, '0', ''].join('\u0000');
    writeFileSync(join(p.dir, 'meta.mjs'), `export default async () => ({ title: ${JSON.stringify(title)} });\n`);
    writeFileSync(
      join(p.dir, 'splitdance.json'),
      JSON.stringify({ source: 'src', retries: 2, stages: [{ name: 'meta', handler: './meta.mjs' }, { name: 'echo', needs: ['meta'], exec: '/bin/echo {inputs.meta.title}' }] }),
    );
    const r = await mainIn(p.dir, ['run']);
    expect(r.code).toBe(1);
    const echo = (await attempts(p.dir)).filter((a) => a.key.startsWith('echo/'));
    expect(echo).toHaveLength(1); // permanent: no retry
    expect(echo[0]).toMatchObject({ outcome: 'FAILED' });
    expect(echo[0]!.error).toMatch(/NUL byte/);
    expect(existsSync(forged)).toBe(false);
  });
});
