import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';

const STACK_LINE = /^\s+at .+(:\d+:\d+\)?|\(native\))$/m;

// The fault is injected through the environment the CLI process starts with (test-hooks.ts
// reads it once, at start-up), and the code is the one a shell sees: a separate process.
describe('--verbose', () => {
  it('an unexpected error prints a stack trace with --verbose and only a hint without it', async () => {
    const p = projectWithFiles(2);
    expect((await runCli(['run', 'src', '--exec', 'true'], { cwd: p.dir })).code).toBe(0);
    // A bug, injected by the test-only failpoint: an error that is neither a usage nor a store error.
    const env = { SPLITDANCE_FAILPOINT: 'bug:1' };
    const plain = await runCli(['status'], { cwd: p.dir, env });
    // 70, not 1: a script reads 1 as "tasks failed" (SPEC §6).
    expect(plain.code).toBe(70);
    expect(plain.stderr).toContain('unexpected error');
    expect(plain.stderr).toContain('a bug in splitdance');
    expect(plain.stderr).toContain('internal error injected');
    expect(plain.stderr).toContain('--verbose');
    expect(plain.stderr).not.toMatch(STACK_LINE);

    const verbose = await runCli(['status', '--verbose'], { cwd: p.dir, env });
    expect(verbose.code).toBe(70);
    expect(verbose.stderr).toContain('unexpected error');
    expect(verbose.stderr).toMatch(STACK_LINE);
  });
});
