import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/cli.js';
import { HelperLauncher } from '../../src/worker/helper-launcher.js';
import type { TaskMessage } from '../../src/worker/protocol.js';
import { runExec } from '../../src/worker/run-exec.js';
import { Spawner } from '../../src/worker/spawner.js';

let spawner: Spawner | null = null;
afterEach(() => spawner?.close());

const task = (dir: string, n: number): TaskMessage => ({
  token: n, key: `t${n}`, batch: 'b', stage: '', seq: n, attempt: 1, inputs: {},
  payload: { version: 1, path: join(dir, `t${n}`), rel: `t${n}` },
  logFile: join(dir, 'logs', `${n}.log`),
  output: null,
});

describe.skipIf(!Spawner.available())('HelperLauncher: one Launch per command, fed by the spawner client', () => {
  it('a log that cannot be created: the command runs with its output discarded, and its end says why', async () => {
    spawner = Spawner.start()!;
    const dir = tempDir();
    const logFile = join(dir, 'taken.log');
    mkdirSync(logFile); // a folder where the log would go: the helper can neither create it nor unlink what is there (EISDIR)
    const heard: string[] = [];
    const launch = new HelperLauncher(spawner).launch({ argv: ['/bin/sh', '-c', 'echo hi; exit 3'], fallback: null, vars: {}, logFile });
    launch.onStart((pgid) => heard.push(pgid > 0 ? 'started' : 'no pgid'));
    void launch.ended.then(() => heard.push('ended'));
    const end = await launch.ended;
    expect(heard).toEqual(['started', 'ended']);
    expect(end).toMatchObject({ kind: 'ran', code: 3, logPath: null, outputTail: null, wroteStderr: null, note: `no output kept: its log ${logFile} could not be created: EISDIR` });
  });

  it('an attempt aborted while queued behind another is TERMed the moment it starts', async () => {
    spawner = Spawner.start()!;
    const dir = tempDir();
    const launcher = new HelperLauncher(spawner);
    // A grace far longer than the test: only the TERM sent at its start can end `sleep 100` here.
    const first = runExec('sleep 0.3', task(dir, 1), 60_000, {}, launcher);
    const second = runExec('sleep 100', task(dir, 2), 60_000, {}, launcher);
    const heard: string[] = [];
    second.onStart(() => heard.push('started'));
    second.abort();
    expect(heard).toEqual([]); // still queued
    expect(await first.done).toMatchObject({ ok: true });
    const done = await second.done;
    expect(heard).toEqual(['started']);
    expect(done).toMatchObject({ ok: false, signal: 'SIGTERM', exitCode: null });
  }, 20_000);
});
