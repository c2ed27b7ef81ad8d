import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../helpers/cli.js';
import { missing } from '../helpers/services.js';
import { writeFiles } from '../helpers/project.js';

/**
 * Root resuming a batch in a shared working folder where another user made the store (as the
 * README's `splitdance run src` would) must not run that user's stored command as root, nor
 * leave files of its own in their store; it runs it only when told to trust that user.
 */
const NOBODY = 65534;

describe.skipIf(missing('root', 'the store-owner e2e test (it runs splitdance as nobody)'))('another user’s store, through the CLI', () => {
  it('root’s run and worker refuse nobody’s store (exit 4, no command run, no -wal or -shm made); status reads it; --trust-store-owner runs it', async () => {
    const dir = tempDir('sd-owner-');
    chmodSync(dir, 0o755); // a working folder nobody may use
    writeFiles(dir, { 'src/a.log': 'a\n', 'src/b.log': 'b\n' });
    // Where the stored command writes: a folder only root may write, so nobody's own attempts
    // fail (and wait for a retry) and any line in it was written by a run as root.
    const out = join(dir, 'out');
    mkdirSync(out, { mode: 0o755 });
    chownSync(dir, NOBODY, NOBODY);
    chownSync(join(dir, 'src'), NOBODY, NOBODY);
    const side = join(out, 'ran');
    const exec = `echo {/} >> ${side}`;
    const asNobody = await runCli(['run', 'src', '--exec', exec, '--backoff', '2s', '--no-wait', '-j', '1'], {
      cwd: dir,
      under: ['setpriv', '--reuid', String(NOBODY), '--regid', String(NOBODY), '--clear-groups', '--'],
    });
    expect(asNobody.code, asNobody.stderr).toBe(3); // failed once each, retries not due yet
    const store = join(dir, '.splitdance');
    const files = () => readdirSync(store).sort();
    expect(files()).toEqual(['logs', 'splitdance.db']);

    for (const args of [['run', 'src'], ['worker'], ['retry-failed', '--run'], ['run', 'src', '--dry-run']]) {
      const r = await runCli(args, { cwd: dir });
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(4);
      expect(r.stderr).toMatch(/belongs to nobody \(uid 65534\), not to you \(root\)/);
      expect(r.stderr).toMatch(/run this as nobody, or add --trust-store-owner nobody/);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(existsSync(side), args.join(' ')).toBe(false);
      expect(files(), args.join(' ')).toEqual(['logs', 'splitdance.db']);
    }

    // Looking runs nothing stored: root may read nobody's store, and makes nothing in it.
    const status = await runCli(['status', '--json'], { cwd: dir });
    expect(status.code, status.stderr).toBe(3);
    expect(JSON.parse(status.stdout)).toMatchObject({ total: 2, retrying: 2 });
    expect((await runCli(['tasks'], { cwd: dir })).code).toBe(0);
    expect((await runCli(['show', 'a.log'], { cwd: dir })).code).toBe(0);
    expect(files()).toEqual(['logs', 'splitdance.db']);

    const trusted = await runCli(['run', 'src', '--trust-store-owner', 'nobody'], { cwd: dir });
    expect(trusted.code, trusted.stderr).toBe(0);
    expect(readFileSync(side, 'utf8').trim().split('\n').sort()).toEqual(['a.log', 'b.log']);
  });
});
