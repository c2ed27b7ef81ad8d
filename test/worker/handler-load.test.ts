import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, waitFor } from '../helpers/cli.js';
import { jsonOf, mainIn, mainInProcessEnv } from '../helpers/in-process-cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';

describe('a handler module whose import never settles', () => {
  it('--load-timeout: exit 2 naming the module, nothing written, no worker left', async () => {
    const p = projectWithFiles(2);
    const env = { SD_TEST_MARK: p.dir };
    const r = await mainInProcessEnv(p.dir, ['run', 'src', '--handler', handler('never-loads'), '--load-timeout', '1s'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^splitdance: error: handler module .*never-loads\.mjs did not finish loading within 1s .*--load-timeout/m);
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'the worker to be gone');

    const bad = await mainIn(p.dir, ['run', 'src', '--handler', handler('ok'), '--load-timeout', '0s']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--load-timeout/);
  });
});

describe('R43: the first worker killed from outside while it loads the handler', () => {
  it('SIGKILL during the import: another worker starts and the batch finishes; a handler that throws at import still exits 2', async () => {
    const p = projectWithFiles(6);
    const gate = join(p.dir, 'load-gate');
    const run = mainInProcessEnv(p.dir, ['run', 'src', '--handler', handler('first-load-hangs'), '-j', '1'], { LOAD_GATE: gate });
    // The first worker's import hangs once it has written its pid: it is inside the import now.
    const firstPid = () => (existsSync(gate) ? Number(readFileSync(gate, 'utf8')) : 0);
    await waitFor(() => firstPid() > 0, 20_000, 'the first worker to start its import');
    process.kill(firstPid(), 'SIGKILL');
    const r = await run;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/could not start the handler/);
    const tasks = await jsonOf<{ status: string; attempts: number }[]>(p.dir, ['tasks']);
    expect(tasks.map((t) => [t.status, t.attempts])).toEqual(p.keys.map(() => ['SUCCESS', 1]));

    const broken = await mainIn(p.dir, ['run', 'src', '--handler', handler('broken'), '--batch', 'broken']);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/broken\.mjs failed to load: .*broken on purpose/);
  });
});
