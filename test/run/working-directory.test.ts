import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mainIn, mainInProcessEnv } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';

// A command's work runs in its working directory (its Io's `cwd`), not in the process's: the
// worker processes it forks, the spawner helpers it starts in its own process, and the
// commands both start. From the binary the two are the same folder; called in-process they are
// not, and a relative path in --exec or a handler must land where the command was started.

const WRITTEN = ['seen-by-helper.txt', 'seen-with-print.txt', 'seen-with-node-spawn.txt', 'seen-by-module.txt'];
// What a failing case wrote in the process's working directory (the repository) is not left there.
afterEach(() => WRITTEN.forEach((f) => rmSync(join(process.cwd(), f), { force: true })));

const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean).sort();

/** A project of three files, not the process's working directory (nor under it). */
function project() {
  const p = projectWithFiles(3, 'sd-cwd-');
  expect(p.dir).not.toBe(process.cwd());
  return p;
}

describe("a command's work runs in its working directory", () => {
  it.each<{ how: string; extra: string[]; env: Record<string, string>; file: string }>([
    // --exec alone: the coordinator's own spawner helpers (Node's spawn in forked workers where the helper is not built).
    { how: 'through the spawner helper', extra: [], env: {}, file: 'seen-by-helper.txt' },
    // --print needs stdout and stderr apart: forked workers with Node's spawn.
    { how: 'in forked workers (--print)', extra: ['--print'], env: {}, file: 'seen-with-print.txt' },
    // The helper turned off by the user: forked workers with Node's spawn.
    { how: 'in forked workers (SPLITDANCE_SPAWNER=node)', extra: [], env: { SPLITDANCE_SPAWNER: 'node' }, file: 'seen-with-node-spawn.txt' },
  ])('--exec with a relative path, $how', async ({ extra, env, file }) => {
    const p = project();
    const r = await mainInProcessEnv(p.dir, ['run', 'src', '--exec', `echo {key} >> ${file}`, '-j', '2', ...extra], env);
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(join(process.cwd(), file)), `${file} written in the process's working directory`).toBe(false);
    expect(lines(join(p.dir, file))).toEqual(p.keys);
  });

  it('a module handler writing a relative path', async () => {
    const p = project();
    writeFileSync(
      join(p.dir, 'append-key.mjs'),
      "import { appendFileSync } from 'node:fs';\nexport default async (task) => { appendFileSync('seen-by-module.txt', task.key + '\\n'); return null; };\n",
    );
    const r = await mainIn(p.dir, ['run', 'src', '--handler', './append-key.mjs', '-j', '2']);
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(join(process.cwd(), 'seen-by-module.txt')), "written in the process's working directory").toBe(false);
    expect(lines(join(p.dir, 'seen-by-module.txt'))).toEqual(p.keys);
  });
});
