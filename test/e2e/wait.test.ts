import { describe, expect, it } from 'vitest';
import { sleep, startCli, tempDir } from '../helpers/cli.js';

// `splitdance wait` from the built CLI: a signal while it waits ends it as any command's does
// (130 for SIGINT, 143 for SIGTERM), saying nothing more; a batch named before it exists is
// waited for until --timeout, then exit 3 with one line.

describe('splitdance wait (built CLI)', () => {
  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('%s while it waits for a batch that has not appeared: exit %i, nothing printed after the waiting line', async (signal, code) => {
    const dir = tempDir('sd-wait-e2e-');
    const w = startCli(['wait', '--batch', 'tonight', '--verbose'], { cwd: dir, timeoutMs: 30_000 });
    let stderr = '';
    w.stderr!.on('data', (b) => (stderr += b));
    for (let i = 0; i < 600 && !stderr.includes('waiting for batch'); i++) await sleep(50);
    w.kill(signal);
    const r = await w.result;
    expect([r.code, r.signal]).toEqual([code, null]);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^waiting for batch "tonight" to appear in .*\n$/);
  });

  it('a --timeout of weeks waits (no timer overflow): still waiting after a second', async () => {
    const dir = tempDir('sd-wait-e2e-');
    const w = startCli(['wait', '--batch', 'tonight', '--timeout', '30d', '--verbose'], { cwd: dir, timeoutMs: 30_000 });
    let stderr = '';
    w.stderr!.on('data', (b) => (stderr += b));
    for (let i = 0; i < 600 && !stderr.includes('waiting for batch'); i++) await sleep(50);
    await sleep(1000);
    expect(w.exitCode).toBeNull();
    w.kill('SIGTERM');
    expect((await w.result).code).toBe(143);
  });

  it('at --timeout, exit 3 with one line naming the batch and the store; --verbose first says what it waits for', async () => {
    const dir = tempDir('sd-wait-e2e-');
    const quiet = await startCli(['wait', '--batch', 'tonight', '--timeout', '600ms'], { cwd: dir, timeoutMs: 30_000 }).result;
    expect(quiet.code).toBe(3);
    expect(quiet.stdout).toBe('');
    expect(quiet.stderr).toMatch(/^batch "tonight" did not appear in .*splitdance\.db within 600ms\n$/);
    const r = await startCli(['wait', '--batch', 'tonight', '--timeout', '600ms', '--verbose'], { cwd: dir, timeoutMs: 30_000 }).result;
    expect(r.code).toBe(3);
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toMatch(/^waiting for batch "tonight" to appear in .*splitdance\.db \(polling/);
    expect(lines.at(-1)).toMatch(/^batch "tonight" did not appear in .*splitdance\.db within 600ms$/);
  });
});
