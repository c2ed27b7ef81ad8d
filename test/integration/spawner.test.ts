import { chmodSync, existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli, startCli, waitFor } from '../helpers/cli.js';
import { liveProcesses, processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query } from '../helpers/store.js';

interface Attempt {
  key: string;
  outcome: string;
  exit_code: number | null;
  signal: string | null;
  error: string | null;
  output_tail: string | null;
  log_path: string | null;
}

const attempts = (dir: string) =>
  query<Attempt>(
    dbPathIn(dir),
    'SELECT t.task_key AS key, a.outcome, a.exit_code, a.signal, a.error, a.output_tail, a.log_path FROM attempts a JOIN tasks t ON t.id = a.task_id ORDER BY a.id',
  );

/** Live `sleep MARKER` commands (not the coordinator, whose arguments name them too). */
const sleeping = (marker: string) => liveProcesses(`sleep ${marker}`).filter((l) => /^\s*\d+\s+\S+\s+sleep /.test(l)).length;

const SPAWNER_BUILT = existsSync(join(ROOT, 'dist/native/spawner'));

// `--exec` commands start through the spawner helper when it is built, else with Node's
// spawn (SPLITDANCE_SPAWNER=node); both must behave the same in every observable way.
const modes = [
  { name: 'spawner helper', env: {} as Record<string, string>, parent: 'spawner' },
  { name: "Node's spawn", env: { SPLITDANCE_SPAWNER: 'node' }, parent: 'node' },
];

describe('the spawner helper is built', () => {
  it('by npm run build (a C compiler is present here)', () => {
    expect(SPAWNER_BUILT).toBe(true);
  });
});

describe.each(modes)('--exec through the $name', ({ env, parent }) => {
  it('starts commands from the expected process', async () => {
    const p = projectWithFiles(1);
    const run = startCli(['run', 'src', '--exec', 'cat /proc/$PPID/comm; cut -d" " -f4 /proc/$PPID/stat'], { cwd: p.dir, env });
    expect((await run.result).code).toBe(0);
    const [comm, grandparent] = attempts(p.dir)[0]!.output_tail!.trim().split('\n');
    expect(comm).toBe(parent);
    // The helper of an --exec batch is the coordinator's own child: no worker process in between.
    expect(Number(grandparent)).toBe(run.pid);
  });

  it('captures stdout and stderr into a log only when there is output, and keeps the exit code', async () => {
    const p = projectWithFiles(2);
    const template = 'case {/} in f000.log) printf "out\\n"; printf "err\\n" >&2; exit 3;; esac';
    const r = await runCli(['run', 'src', '--exec', template, '--retries', '0'], { cwd: p.dir, env });
    expect(r.code).toBe(1);
    const [loud, quiet] = [attempts(p.dir).find((a) => a.key === 'f000.log')!, attempts(p.dir).find((a) => a.key === 'f001.log')!];
    expect(loud).toMatchObject({ outcome: 'FAILED', exit_code: 3, signal: null, output_tail: 'out\nerr\n' });
    expect(loud.error).toBe('exit code 3: err');
    expect(readFileSync(loud.log_path!, 'utf8')).toBe('out\nerr\n');
    expect(quiet).toMatchObject({ outcome: 'SUCCESS', exit_code: 0, output_tail: null, log_path: null });
    const logDir = join(p.dir, '.splitdance', 'logs');
    const files = readdirSync(logDir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    expect(files.map((f) => f.name)).toHaveLength(1); // the silent task left no file
  });

  it('runs a simple command directly with the task variables, as /bin/sh -c would', async () => {
    const p = projectWithFiles(2);
    const r = await runCli(['run', 'src', '--exec', 'printenv SPLITDANCE_KEY SPLITDANCE_ATTEMPT'], { cwd: p.dir, env });
    expect(r.code).toBe(0);
    expect(attempts(p.dir).map((a) => a.output_tail).sort()).toEqual(['f000.log\n1\n', 'f001.log\n1\n']);
  });

  it('reports a missing command as the shell does: exit 127, "not found"', async () => {
    const p = projectWithFiles(1);
    const r = await runCli(['run', 'src', '--exec', 'no-such-command-sd {}', '--retries', '0'], { cwd: p.dir, env });
    expect(r.code).toBe(1);
    const a = attempts(p.dir)[0]!;
    expect(a.exit_code).toBe(127);
    expect(a.output_tail).toMatch(/no-such-command-sd: .*not found/);
  });

  it('reports a command killed by its own signal as the shell does: exit 128+n', async () => {
    const p = projectWithFiles(1);
    const script = join(p.dir, 'segv.sh');
    writeFileSync(script, '#!/bin/sh\nkill -SEGV $$\n');
    chmodSync(script, 0o755);
    for (const template of [`${script} {}`, `: ; ${script} {}`]) {
      const r = await runCli(['run', 'src', '--exec', template, '--retries', '0', '--batch', template.length.toString()], { cwd: p.dir, env });
      expect(r.code).toBe(1);
    }
    expect(attempts(p.dir).map((a) => [a.exit_code, a.signal])).toEqual([
      [139, null],
      [139, null],
    ]);
  });

  it('a timeout kills a directly run command and its group', async () => {
    const p = projectWithFiles(1);
    const marker = `1000.${process.pid}7`;
    const r = await runCli(['run', 'src', '--exec', `sleep ${marker}`, '--timeout', '400ms', '--retries', '0'], { cwd: p.dir, env });
    expect(r.code).toBe(1);
    expect(attempts(p.dir)[0]).toMatchObject({ outcome: 'TIMEOUT', signal: 'SIGTERM' });
    await waitFor(() => sleeping(marker) === 0, 2000, 'no sleep survivor');
  });

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

describe.skipIf(!SPAWNER_BUILT)('when the spawner helper dies', () => {
  const helperOf = (mark: string) => processesWithEnv(mark).find((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'spawner');

  it('in an --exec batch its worker has died: the attempt is CRASHED and retried; its command does not survive', async () => {
    const p = projectWithFiles(1);
    const marker = `1.${process.pid}9`;
    const run = startCli(['run', 'src', '--exec', `sleep ${marker}`, '--retries', '1', '--backoff', '10ms'], { cwd: p.dir, env: { SD_MARK: p.dir } });
    await waitFor(() => sleeping(marker) === 1, 10_000, 'the command running');
    process.kill(helperOf(p.dir)!, 'SIGKILL');
    const r = await run.result;
    expect(r.code, r.stderr).toBe(0);
    const rows = attempts(p.dir);
    expect(rows.map((a) => a.outcome)).toEqual(['CRASHED', 'SUCCESS']);
    expect(rows[0]!.error).toMatch(/worker killed by SIGKILL/);
    await waitFor(() => sleeping(marker) === 0, 2000, 'no sleep survivor');
  });

  it('in a worker process (a stage batch with a module stage) the attempt fails and the worker goes on with Node spawn', async () => {
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
    const run = startCli(['run', '-j', '1'], { cwd: p.dir, env: { SD_MARK: p.dir } });
    await waitFor(() => sleeping(marker) === 1, 10_000, 'the command running');
    process.kill(helperOf(p.dir)!, 'SIGKILL');
    const r = await run.result;
    expect(r.code, r.stderr).toBe(0);
    const second = attempts(p.dir).filter((a) => a.key.startsWith('second/'));
    expect(second.map((a) => a.outcome)).toEqual(['FAILED', 'SUCCESS']);
    expect(second[0]!.error).toBe('the spawner helper died while the command ran');
    await waitFor(() => sleeping(marker) === 0, 2000, 'no sleep survivor');
  });
});
