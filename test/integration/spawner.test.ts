import { spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli, sleep, startCli, tempDir, waitFor } from '../helpers/cli.js';
import { InProcessWorker } from '../../src/pool/in-process-worker.js';
import type { FromWorker, TaskMessage } from '../../src/worker/protocol.js';
import { SPAWNER_PROTOCOL, Spawner, speaksProtocol } from '../../src/worker/spawner.js';
import { liveProcesses, processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { missing } from '../helpers/services.js';
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
  it.skipIf(missing('cc', 'the spawner helper tests'))('by npm run build (a C compiler is present here)', () => {
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
    const run = startCli(['run', '-j', '1'], { cwd: p.dir, env: { SD_MARK: p.dir } });
    await waitFor(() => sleeping(marker) === 1, 10_000, 'the command running');
    process.kill(helperOf(p.dir)!, 'SIGKILL');
    const r = await run.result;
    expect(r.code, r.stderr).toBe(0);
    const second = attempts(p.dir).filter((a) => a.key.startsWith('second/'));
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
    const r = await runCli(['run'], { cwd: p.dir });
    expect(r.code).toBe(1);
    const echo = attempts(p.dir).filter((a) => a.key.startsWith('echo/'));
    expect(echo).toHaveLength(1); // permanent: no retry
    expect(echo[0]).toMatchObject({ outcome: 'FAILED' });
    expect(echo[0]!.error).toMatch(/NUL byte/);
    expect(existsSync(forged)).toBe(false);
  });
});

/** One run request in the helper's protocol (spawner.c): its fields, NUL-terminated. */
const request = (id: number, log: string, argv: string[], fallback = '') =>
  ['R', String(id), log, String(argv.length), ...argv, '0', fallback].join('\0') + '\0';

/** A helper whose replies are collected as lines. */
function helper(): { proc: ReturnType<typeof spawn>; lines: string[] } {
  const proc = spawn(join(ROOT, 'dist/native/spawner'), [], { stdio: ['pipe', 'pipe', 'ignore'] });
  const lines: string[] = [];
  let buffered = '';
  proc.stdout!.on('data', (b: Buffer) => {
    const parts = (buffered + b.toString()).split('\n');
    buffered = parts.pop()!;
    lines.push(...parts);
  });
  return { proc, lines };
}

describe.skipIf(!SPAWNER_BUILT)('the helper itself', () => {
  it('holds its slot\'s queue: each command starts when the one before exits, with nobody reading or writing meanwhile', async () => {
    const dir = tempDir();
    const h = helper();
    const stamp = join(dir, 'starts');
    for (let i = 1; i <= 3; i++) h.proc.stdin!.write(request(i, '', ['/bin/sh', '-c', `echo $$ >> ${stamp}; sleep 0.2`]));
    // Nothing is read from or written to the helper while the three run: it chains them itself.
    await sleep(1000);
    expect(readFileSync(stamp, 'utf8').trim().split('\n')).toHaveLength(3);
    await waitFor(() => h.lines.filter((l) => / X /.test(l)).length === 3, 5000, 'three ends');
    // One at a time, in order: each started only after the one before it ended.
    expect(h.lines.map((l) => l.split(' ').slice(0, 2).join(' '))).toEqual(['1 S', '1 X', '2 S', '2 X', '3 S', '3 X']);
    h.proc.stdin!.end();
  });

  it('gives back its queued commands unstarted on a drop request; the running one goes on', async () => {
    const dir = tempDir();
    const h = helper();
    for (let i = 1; i <= 3; i++) h.proc.stdin!.write(request(i, '', ['/bin/sh', '-c', `touch ${join(dir, `ran${i}`)}; sleep 0.3`]));
    await waitFor(() => existsSync(join(dir, 'ran1')), 5000, 'the first command');
    h.proc.stdin!.write('D\0');
    await waitFor(() => h.lines.some((l) => l.startsWith('1 X')), 5000, 'the first to end');
    expect(h.lines).toEqual(expect.arrayContaining(['2 D', '3 D']));
    await sleep(400);
    expect(['ran1', 'ran2', 'ran3'].filter((f) => existsSync(join(dir, f)))).toEqual(['ran1']);
    h.proc.stdin!.end();
  });

  it('runs a direct command\'s shell fallback in its turn when the command cannot be executed', async () => {
    const dir = tempDir();
    const h = helper();
    h.proc.stdin!.write(request(1, join(dir, '1.log'), ['no-such-command-xyz'], 'no-such-command-xyz'));
    h.proc.stdin!.write(request(2, join(dir, '2.log'), ['no-such-command-xyz']));
    await waitFor(() => h.lines.length >= 3, 5000, 'replies');
    expect(h.lines[0]).toMatch(/^1 S \d+ \d+$/);
    expect(h.lines[1]).toMatch(/^1 X 32512 \d+ \d+ 0 1$/); // the shell's exit 127, and its "not found" on stderr
    expect(readFileSync(join(dir, '1.log'), 'utf8')).toMatch(/not found/);
    expect(h.lines[2]).toBe(`2 F ${constants.errno.ENOENT}`);
    h.proc.stdin!.end();
  });

  it('says whether a command wrote on stderr (2: not known, its output discarded); the log keeps both streams in the order written', async () => {
    const dir = tempDir();
    const h = helper();
    h.proc.stdin!.write(request(1, join(dir, '1.log'), ['/bin/sh', '-c', 'echo 0; exit 1']));
    h.proc.stdin!.write(request(2, join(dir, '2.log'), ['/bin/sh', '-c', 'echo a; echo b >&2; echo c; echo d >&2; exit 1']));
    h.proc.stdin!.write(request(3, join(dir, '3.log'), ['/bin/sh', '-c', 'exit 1']));
    h.proc.stdin!.write(request(4, '', ['/bin/sh', '-c', 'exit 1']));
    await waitFor(() => h.lines.filter((l) => / X /.test(l)).length === 4, 5000, 'four ends');
    const ends = h.lines.filter((l) => / X /.test(l));
    expect(ends.map((l) => [l.split(' ')[0], l.split(' ').pop()])).toEqual([['1', '0'], ['2', '1'], ['3', '0'], ['4', '2']]);
    expect(readFileSync(join(dir, '2.log'), 'utf8')).toBe('a\nb\nc\nd\n');
    h.proc.stdin!.end();
  });

  it('says which protocol it speaks; a binary of another version is not used', () => {
    expect(speaksProtocol(join(ROOT, 'dist/native/spawner'))).toBe(true);
    const stale = join(tempDir(), 'spawner');
    writeFileSync(stale, '#!/bin/sh\necho "splitdance-spawner protocol 1"\n');
    chmodSync(stale, 0o755);
    expect(speaksProtocol(stale)).toBe(false);
    expect(readFileSync(join(ROOT, 'src/worker/spawner.c'), 'utf8')).toContain(`#define PROTOCOL "${SPAWNER_PROTOCOL}"`);
  });

  it('trusts the check its build made (a stamp beside the binary) only while the stamp describes the file at the path', () => {
    const dir = tempDir();
    const binary = join(dir, 'spawner');
    // A binary whose own --check would fail: only the stamp can make it usable, so a true proves nothing ran.
    writeFileSync(binary, '#!/bin/sh\necho "splitdance-spawner protocol 1"\n');
    chmodSync(binary, 0o755);
    const stampFor = (protocol: string) => {
      const { size, mtimeMs, ino, dev } = statSync(binary);
      writeFileSync(`${binary}.checked`, JSON.stringify({ protocol, size, mtimeMs, ino, dev }));
    };
    stampFor(SPAWNER_PROTOCOL);
    expect(speaksProtocol(binary)).toBe(true);
    stampFor('splitdance-spawner protocol 1'); // a stamp of another protocol
    expect(speaksProtocol(binary)).toBe(false);
    stampFor(SPAWNER_PROTOCOL);
    // Another file put at the path (a copy, a rebuild elsewhere): the stamp no longer describes it.
    writeFileSync(`${binary}.new`, readFileSync(binary));
    chmodSync(`${binary}.new`, 0o755);
    renameSync(`${binary}.new`, binary);
    expect(speaksProtocol(binary)).toBe(false);
    writeFileSync(`${binary}.checked`, 'not json');
    expect(speaksProtocol(binary)).toBe(false);
  });

  it("the build's stamp describes the built helper", () => {
    const stamp = JSON.parse(readFileSync(join(ROOT, 'dist/native/spawner.checked'), 'utf8'));
    const st = statSync(join(ROOT, 'dist/native/spawner'));
    expect(stamp).toEqual({ protocol: SPAWNER_PROTOCOL, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, dev: st.dev });
  });

  it('kills the command it started when it cannot report it (its worker stopped reading)', async () => {
    const marker = `37.${process.pid}5`;
    const dir = tempDir();
    const helper = spawn(join(ROOT, 'dist/native/spawner'), [], { stdio: ['pipe', 'pipe', 'ignore'] });
    helper.stdout.destroy(); // the reply to this request cannot be written
    helper.stdin.write(request(1, join(dir, 'o.log'), ['sleep', marker]));
    await new Promise((done) => helper.on('exit', done));
    await sleep(100);
    expect(sleeping(marker)).toBe(0);
  });

  it('an in-process worker whose helper dies starts none of its queued attempts', async () => {
    const dir = tempDir();
    const spawner = Spawner.start()!;
    const worker = new InProcessWorker(spawner);
    const messages: FromWorker[] = [];
    worker.on('message', (m: FromWorker) => messages.push(m));
    const exited = new Promise((done) => worker.on('exit', done));
    worker.send({ type: 'load', handlers: { '': { kind: 'exec', template: `touch {}; sleep 0.3` } }, killGraceMs: 1000, watchMemory: false });
    await waitFor(() => messages.some((m) => m.type === 'ready'), 5000, 'ready');
    const task = (n: number): TaskMessage => ({
      token: n, key: `t${n}`, batch: 'b', stage: '', seq: n, attempt: 1, inputs: {},
      payload: { version: 1, path: join(dir, `t${n}`), rel: `t${n}` },
      logFile: join(dir, 'logs', `${n}.log`),
      output: null,
    });
    worker.send({ type: 'run', tasks: [task(1), task(2), task(3)] });
    await waitFor(() => existsSync(join(dir, 't1')), 5000, 'the first attempt running');
    process.kill(spawner.pid!, 'SIGKILL');
    await exited;
    await sleep(800); // longer than the attempts would take
    expect(['t1', 't2', 't3'].filter((f) => existsSync(join(dir, f)))).toEqual(['t1']);
    expect(messages.filter((m) => m.type === 'done')).toEqual([]);
  });
});
