import { beforeAll, describe, expect, it } from 'vitest';
import { mainIn, mainOnTerminal, mainInEnv } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { SGR } from '../helpers/pty.js';

/**
 * What a stream gets (SPEC §7), decided from the command's Io: `--color=always|never|auto`
 * decides colours whatever the stream; piped `tasks` and `batches` print rows alone, a terminal
 * gets a header. The Io marks a terminal as the CLI's does from isTTY (test/e2e/colors.test.ts
 * runs the CLI under a real pty).
 */
describe('colours, TERM=dumb and headers', () => {
  let dir = '';
  beforeAll(async () => {
    dir = projectWithFiles(3).dir;
    expect((await mainIn(dir, ['run', 'src', '--exec', 'case {key} in f002.log) exit 1;; esac', '--retries', '0'])).code).toBe(1);
  });

  it('--color=always colours a pipe, --color=never and --no-color never colour a terminal, --color=auto follows the stream', async () => {
    // A pipe, with no colour hints in the environment (the Io's environment is empty).
    for (const flag of ['--color=always', '--color']) {
      const r = await mainIn(dir, ['status', flag]);
      expect(r.code, flag).toBe(1);
      expect(r.stdout, flag).toMatch(SGR);
    }
    // Asked for explicitly, it wins over NO_COLOR and TERM=dumb too.
    expect((await mainInEnv(dir, ['status', '--color=always'], { NO_COLOR: '1', TERM: 'dumb' })).stdout).toMatch(SGR);
    expect((await mainIn(dir, ['status', '--color=auto'])).stdout).not.toMatch(SGR);
    for (const flag of ['--color=never', '--no-color']) expect((await mainOnTerminal(dir, ['status', flag])).output, flag).not.toMatch(SGR);
    expect((await mainOnTerminal(dir, ['status', '--color=auto'])).output).toMatch(SGR);
    const bad = await mainIn(dir, ['status', '--color=sometimes']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--color .*expects always, never or auto/);
  });

  it('piped, tasks and batches print tab-separated rows without a header; on a terminal both have one', async () => {
    const tasks = await mainIn(dir, ['tasks']);
    const batches = await mainIn(dir, ['batches']);
    expect(tasks.stdout.split('\n').filter(Boolean)).toHaveLength(3);
    expect(tasks.stdout.split('\n')[0]).toMatch(/^f000\.log\tSUCCESS\t1\t/);
    const rows = batches.stdout.split('\n').filter(Boolean);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.split('\t')).toEqual([expect.stringMatching(/^src-/), expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/), '3', '2', '1', '0', `${dir}/src`]);
    expect((await mainOnTerminal(dir, ['tasks'])).output).toMatch(/^KEY +STATUS +ATTEMPTS/m);
    expect((await mainOnTerminal(dir, ['batches'])).output).toMatch(/^BATCH +CREATED +TOTAL/m);
  });
});
