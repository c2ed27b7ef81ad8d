import { spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, sleep, tempDir, waitFor } from '../helpers/cli.js';
import { InProcessWorker } from '../../src/pool/in-process-worker.js';
import type { FromWorker, TaskMessage } from '../../src/worker/protocol.js';
import { SPAWNER_PROTOCOL, Spawner, speaksProtocol } from '../../src/worker/spawner.js';
import { sleeping } from '../helpers/procs.js';

// The spawner helper (src/worker/spawner.c) spoken to directly, through its protocol: no run,
// no coordinator. How runs use it is test/worker/spawner.test.ts.

const SPAWNER_BUILT = existsSync(join(ROOT, 'dist/native/spawner'));

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
