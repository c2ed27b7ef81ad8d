import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { runInPty, SGR } from '../helpers/pty.js';

/** Any escape sequence: colours, cursor movement, hiding the cursor (what a bar and a redraw write). */
const ESC = /\x1b/; // eslint-disable-line no-control-regex

/**
 * What a real terminal gets (SPEC §7), the CLI under a pty: `TERM=dumb` is a terminal without
 * colours or cursor codes; `watch` draws ISO UTC times. The colour and header decisions for
 * each stream are tested in-process in test/cli/colors.test.ts.
 */
describe('colours, TERM=dumb and headers', () => {
  let dir = '';
  beforeAll(async () => {
    dir = projectWithFiles(3).dir;
    expect((await mainIn(dir, ['run', 'src', '--exec', 'case {key} in f002.log) exit 1;; esac', '--retries', '0'])).code).toBe(1);
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

});

describe('one style for times and sizes', () => {
  it('watch on a terminal shows ISO UTC times, in its header and its failures; status, prune and dry-run print sizes in bytes units', async () => {
    const p = projectWithFiles(3);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'case {key} in f002.log) exit 1;; esac', '--retries', '0'])).code).toBe(1);
    const watch = await runInPty(['watch'], { cwd: p.dir });
    expect(watch.code).toBe(1);
    const iso = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/;
    expect(watch.output).toMatch(new RegExp(`batch src-\\S+ \\(.*\\)\\s+${iso.source}`));
    expect(watch.output).toMatch(new RegExp(`${iso.source}  f002\\.log #1 .*FAILED`));
    expect(watch.output).not.toMatch(/\d:\d\d:\d\d ?[AP]M/);

    const status = await mainIn(p.dir, ['status']);
    expect(status.stdout).toMatch(/^store \d+(\.\d+)? (B|KB|MB) on disk$/m);
    writeFileSync(join(p.dir, 'big.txt'), 'a line\n'.repeat(1000));
    const dry = await mainIn(p.dir, ['run', 'big.txt', '--exec', 'true', '--dry-run', '--chunk-size', '1MiB']);
    expect(dry.stdout).toMatch(/\(file, 1 MB per chunk\)/);
    const prune = await mainIn(p.dir, ['prune', '--older-than', '0s']);
    expect(prune.stderr).toMatch(/, 0 B of logs freed/);
  });
});
