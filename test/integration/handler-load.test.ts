import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, startCli, waitFor } from '../helpers/cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';

describe('a handler module whose import never settles', () => {
  it('--load-timeout: exit 2 naming the module, nothing written, no worker left', async () => {
    const p = projectWithFiles(2);
    const env = { SD_TEST_MARK: p.dir };
    const r = await runCli(['run', 'src', '--handler', handler('never-loads'), '--load-timeout', '1s'], { cwd: p.dir, env });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^splitdance: error: handler module .*never-loads\.mjs did not finish loading within 1s .*--load-timeout/m);
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'the worker to be gone');

    const bad = await runCli(['run', 'src', '--handler', handler('ok'), '--load-timeout', '0s'], { cwd: p.dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--load-timeout/);
  });

  for (const [signal, code] of [
    ['SIGTERM', 143],
    ['SIGINT', 130],
    ['SIGHUP', 143], // a shutdown like SIGTERM, named as received
  ] as const) {
    it(`${signal} while the workers load it ends start-up with ${code}, nothing written, no worker left`, async () => {
      const p = projectWithFiles(2);
      const run = startCli(['run', 'src', '--handler', handler('never-loads')], { cwd: p.dir, env: { SD_TEST_MARK: p.dir } });
      // The coordinator and its first worker, which is stuck in the import.
      await waitFor(() => processesWithEnv(p.dir).length >= 2, 20_000, 'the worker to start loading');
      run.kill(signal);
      const r = await run.result;
      expect(r.code, r.stderr).toBe(code);
      expect(r.stderr).toMatch(new RegExp(`${signal} before any task started; nothing ran`));
      expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
      await waitFor(() => processesWithEnv(p.dir).length === 0, 5000, 'the worker to be gone');
    });
  }
});

describe('R43: the first worker killed from outside while it loads the handler', () => {
  it('SIGKILL during the import: another worker starts and the batch finishes; a handler that throws at import still exits 2', async () => {
    const p = projectWithFiles(6);
    const gate = join(p.dir, 'load-gate');
    const run = startCli(['run', 'src', '--handler', handler('first-load-hangs'), '-j', '1'], { cwd: p.dir, env: { LOAD_GATE: gate } });
    // The first worker's import hangs once it has written its pid: it is inside the import now.
    const firstPid = () => (existsSync(gate) ? Number(readFileSync(gate, 'utf8')) : 0);
    await waitFor(() => firstPid() > 0, 20_000, 'the first worker to start its import');
    process.kill(firstPid(), 'SIGKILL');
    const r = await run.result;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/could not start the handler/);
    const tasks = JSON.parse((await runCli(['tasks', '--json'], { cwd: p.dir })).stdout) as { status: string; attempts: number }[];
    expect(tasks.map((t) => [t.status, t.attempts])).toEqual(p.keys.map(() => ['SUCCESS', 1]));

    const broken = await runCli(['run', 'src', '--handler', handler('broken'), '--batch', 'broken'], { cwd: p.dir });
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/broken\.mjs failed to load: .*broken on purpose/);
  });
});

describe('a handler module with a syntax error', () => {
  // Each: the module, the line with the error (3), and the column of its first bad character.
  const cases = [
    ['handler.ts', 'export default async (task: unknown) => {\n  const x = 1;\n  const y = = 2;\n  return x + y;\n};\n', 13],
    ['handler.mjs', 'export default async () => {\n  const x = 1;\n  const y = = 2;\n};\n', 13],
    ['handler.js', 'module.exports = async () => {\n  const x = 1;\n  let = ;\n};\n', 9],
  ] as const;
  for (const [name, text, column] of cases) {
    it(`${name}: exit 2 naming ${name}:3:${column} and the message, in lines of at most 80 columns, nothing written`, async () => {
      const p = projectWithFiles(1);
      writeFileSync(join(p.dir, name), text);
      for (const extra of [[], ['--verbose']]) {
        const r = await runCli(['run', 'src', '--handler', `./${name}`, ...extra], { cwd: p.dir });
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toMatch(new RegExp(`^splitdance: error: handler module .*${name.replace('.', '\\.')} has a syntax error:\\n  ${name.replace('.', '\\.')}:3:${column}: Unexpected (token )?.[=;].\\n`, 'm'));
        const shown = extra.length ? r.stderr.split('\n').slice(0, 2) : r.stderr.split('\n');
        for (const l of shown) expect(l.length, l).toBeLessThanOrEqual(80);
        expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
      }
    });
  }
});
