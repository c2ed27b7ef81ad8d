import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { missing } from '../helpers/services.js';

/**
 * `splitdance completion` called in-process, and `man ./splitdance.1` rendering the page the
 * build wrote. The scripts loaded in real shells: test/e2e/completion.test.ts.
 */
describe('bash completion', () => {
  it('--batches without a store prints nothing, exits 0 and creates none', async () => {
    const empty = tempDir();
    const r = await mainIn(empty, ['completion', '--batches']);
    expect([r.code, r.stdout]).toEqual([0, '']);
    expect(existsSync(join(empty, '.splitdance'))).toBe(false);
    const bad = await mainIn(empty, ['completion', 'tcsh']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^splitdance: error: completion needs a shell: bash, zsh or fish, not "tcsh"/);
  });
});

describe.skipIf(missing('man', 'the man page test'))('the man page', () => {
  it('renders with man, naming every command, the grouped run options and the placeholders', () => {
    const r = spawnSync('man', ['./splitdance.1'], { cwd: ROOT, env: { ...process.env, MANWIDTH: '100', MANPAGER: 'cat', PAGER: 'cat' }, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const page = r.stdout.replace(/.\x08/g, ''); // eslint-disable-line no-control-regex
    for (const cmd of ['run', 'worker', 'status', 'watch', 'tasks', 'show', 'logs', 'retry-failed', 'completion']) expect(page).toContain(`splitdance ${cmd} `);
    expect(page).toMatch(/Retries and time:[\s\S]*--max-backoff <duration>/);
    expect(page).toMatch(/PLACEHOLDERS[\s\S]*\{inputs\.STAGE\.FIELD\}/);
    expect(page).toMatch(/EXIT STATUS[\s\S]*130, 143/);
  });
});
