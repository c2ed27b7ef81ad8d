import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { envWithoutColorHints, runInPty, SGR } from '../helpers/pty.js';

/** Any escape sequence: colours, cursor movement, hiding the cursor (what a bar and a redraw write). */
const ESC = /\x1b/; // eslint-disable-line no-control-regex

/**
 * What a terminal gets (SPEC §7): `TERM=dumb` is a terminal without colours or cursor codes;
 * `--color=always|never|auto` decides colours whatever the stream; piped `tasks` and `batches`
 * print rows alone, a terminal gets a header.
 */
describe('colours, TERM=dumb and headers', () => {
  let dir = '';
  beforeAll(async () => {
    dir = projectWithFiles(3).dir;
    expect((await runCli(['run', 'src', '--exec', 'case {key} in f002.log) exit 1;; esac', '--retries', '0'], { cwd: dir })).code).toBe(1);
  });

  it('TERM=dumb on a terminal: no colours, no bar, no cursor codes; the plain lines and the summary instead', async () => {
    const p = projectWithFiles(6);
    const run = await runInPty(['run', 'src', '--exec', 'sleep 0.2', '-j', '2'], { cwd: p.dir, env: { TERM: 'dumb' } });
    expect(run.code).toBe(0);
    expect(run.output).not.toMatch(ESC);
    expect(run.output).toMatch(/done: 6 succeeded, 0 failed of 6/);
    const status = await runInPty(['status'], { cwd: dir, env: { TERM: 'dumb' } });
    expect(status.code).toBe(1);
    expect(status.output).toContain('2 succeeded');
    expect(status.output).not.toMatch(ESC);
    // The same terminal with a real TERM is coloured: what TERM=dumb turns off.
    expect((await runInPty(['status'], { cwd: dir })).output).toMatch(SGR);
  });

  it('--color=always colours a pipe, --color=never and --no-color never colour a terminal, --color=auto follows the stream', async () => {
    const piped = { cwd: dir, cleanEnv: true, env: envWithoutColorHints() };
    for (const flag of ['--color=always', '--color']) {
      const r = await runCli(['status', flag], piped);
      expect(r.code, flag).toBe(1);
      expect(r.stdout, flag).toMatch(SGR);
    }
    // Asked for explicitly, it wins over NO_COLOR and TERM=dumb too.
    expect((await runCli(['status', '--color=always'], { ...piped, env: envWithoutColorHints({ NO_COLOR: '1', TERM: 'dumb' }) })).stdout).toMatch(SGR);
    expect((await runCli(['status', '--color=auto'], piped)).stdout).not.toMatch(SGR);
    for (const flag of ['--color=never', '--no-color']) expect((await runInPty(['status', flag], { cwd: dir })).output, flag).not.toMatch(SGR);
    expect((await runInPty(['status', '--color=auto'], { cwd: dir })).output).toMatch(SGR);
    const bad = await runCli(['status', '--color=sometimes'], piped);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--color .*expects always, never or auto/);
  });

  it('piped, tasks and batches print tab-separated rows without a header; on a terminal both have one', async () => {
    const tasks = await runCli(['tasks'], { cwd: dir });
    const batches = await runCli(['batches'], { cwd: dir });
    expect(tasks.stdout.split('\n').filter(Boolean)).toHaveLength(3);
    expect(tasks.stdout.split('\n')[0]).toMatch(/^f000\.log\tSUCCESS\t1\t/);
    const rows = batches.stdout.split('\n').filter(Boolean);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.split('\t')).toEqual([expect.stringMatching(/^src-/), expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/), '3', '2', '1', '0', `${dir}/src`]);
    expect((await runInPty(['tasks'], { cwd: dir })).output).toMatch(/^KEY +STATUS +ATTEMPTS/m);
    expect((await runInPty(['batches'], { cwd: dir })).output).toMatch(/^BATCH +CREATED +TOTAL/m);
  });
});

describe('one style for times and sizes', () => {
  it('watch on a terminal shows ISO UTC times, in its header and its failures; status, prune and dry-run print sizes in bytes units', async () => {
    const p = projectWithFiles(3);
    expect((await runCli(['run', 'src', '--exec', 'case {key} in f002.log) exit 1;; esac', '--retries', '0'], { cwd: p.dir })).code).toBe(1);
    const watch = await runInPty(['watch'], { cwd: p.dir });
    expect(watch.code).toBe(1);
    const iso = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/;
    expect(watch.output).toMatch(new RegExp(`batch src-\\S+ \\(.*\\)\\s+${iso.source}`));
    expect(watch.output).toMatch(new RegExp(`${iso.source}  f002\\.log #1 .*FAILED`));
    expect(watch.output).not.toMatch(/\d:\d\d:\d\d ?[AP]M/);

    const status = await runCli(['status'], { cwd: p.dir });
    expect(status.stdout).toMatch(/^store \d+(\.\d+)? (B|KB|MB) on disk$/m);
    writeFileSync(join(p.dir, 'big.txt'), 'a line\n'.repeat(1000));
    const dry = await runCli(['run', 'big.txt', '--exec', 'true', '--dry-run', '--chunk-size', '1MiB'], { cwd: p.dir });
    expect(dry.stdout).toMatch(/\(file, 1 MB per chunk\)/);
    const prune = await runCli(['prune', '--older-than', '0s'], { cwd: p.dir });
    expect(prune.stderr).toMatch(/, 0 B of logs freed/);
  });
});
