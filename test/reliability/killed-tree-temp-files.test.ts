import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli, sleep, startCli, waitFor } from '../helpers/cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';

// SPEC §9, "Files splitdance writes": a declared output's temporary file left by a SIGKILL of
// the whole process tree (the CLI, its workers, their commands) is removed by the next run.

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone already
  }
}

describe("declared outputs' temporary files", () => {
  it('of an {inputs…} output template are removed by the next run after a kill of the whole tree', async () => {
    const p = projectWithFiles(1);
    const job = {
      source: 'src',
      stages: [
        { name: 'a', handler: handler('write-out'), output: 'out/a/{rel}' },
        { name: 'b', needs: ['a'], exec: 'echo part > {out}; [ -n "$FAST" ] || sleep 30; echo rest >> {out}', output: 'out/b/{inputs.a.name}.txt' },
      ],
    };
    writeFileSync(join(p.dir, 'job.json'), JSON.stringify(job));
    const marker = `${p.dir}#tree`;
    const env = { RESULT_NAME: 'named', SIM_MACHINE: marker };
    const first = startCli(['run', '--job', 'job.json', '--quiet'], { cwd: p.dir, env });
    const b = join(p.dir, 'out', 'b');
    await waitFor(() => existsSync(b) && readdirSync(b).some((f) => f.endsWith('.tmp')), 20_000, "stage b's temporary file");
    for (let round = 0; round < 50 && processesWithEnv(marker).length; round++) {
      for (const pid of processesWithEnv(marker)) signal(pid, 'SIGKILL');
      await sleep(20);
    }
    await first.result;
    const again = await runCli(['run', '--job', 'job.json', '--quiet'], { cwd: p.dir, env: { ...env, FAST: '1' } });
    expect(again.code, again.stderr).toBe(0);
    expect(readdirSync(b)).toEqual(['named.txt']);
    expect(readFileSync(join(b, 'named.txt'), 'utf8')).toBe('part\nrest\n');
  });
});
