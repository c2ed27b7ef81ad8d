import { describe, expect, it } from 'vitest';
import { mainIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';

/**
 * `status` exits with the batch's verdict, as `watch` does (SPEC §6), so
 * `splitdance status && next-step` works in a script; and a bug in splitdance has its own code.
 */
describe('status exit codes', () => {
  it('status exits 0 when every task succeeded, 1 with FAILED tasks, 3 while not done, with and without --json', async () => {
    const p = projectWithFiles(2);
    const opts = { cwd: p.dir };
    expect((await mainIn(opts.cwd, ['run', 'src', '--batch', 'ok', '--exec', 'true'])).code).toBe(0);
    expect((await mainIn(opts.cwd, ['run', 'src', '--batch', 'bad', '--exec', 'false', '--retries', '0'])).code).toBe(1);
    // --no-wait leaves the retry for later: the batch is not done.
    expect((await mainIn(opts.cwd, ['run', 'src', '--batch', 'later', '--exec', 'false', '--retry-quiet', '--retries', '1', '--backoff', '1h', '--no-wait'])).code).toBe(3);
    for (const [batch, code] of [['ok', 0], ['bad', 1], ['later', 3]] as const) {
      for (const json of [[], ['--json']]) {
        const r = await mainIn(opts.cwd, ['status', '--batch', batch, ...json]);
        expect(r.code, `status --batch ${batch} ${json.join(' ')}: ${r.stderr}`).toBe(code);
        expect(r.stdout).toContain(batch);
      }
    }
    // The script idiom the exit code is for.
    const chained = await mainIn(opts.cwd, ['status', '--batch', 'bad']);
    expect(chained.code).not.toBe(0);
  });

  it('status exits 1 for a batch that ended with CANCELLED tasks', async () => {
    const p = projectWithFiles(2);
    const opts = { cwd: p.dir };
    expect((await mainIn(opts.cwd, ['run', 'src', '--batch', 'c', '--exec', 'false', '--retry-quiet', '--retries', '1', '--backoff', '1h', '--no-wait'])).code).toBe(3);
    expect((await mainIn(opts.cwd, ['cancel', '--batch', 'c'])).code).toBe(0);
    expect((await mainIn(opts.cwd, ['status', '--batch', 'c'])).code).toBe(1);
  });
});
