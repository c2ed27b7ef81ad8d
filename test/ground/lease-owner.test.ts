import { spawnSync } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isDeadOwner, isLiveLocalOwner, ownerId, parseOwner } from '../../src/lease-owner.js';

// RELIABILITY R29: a lease owner records its PID namespace; only an owner provably in ours
// is judged by its pid. Real processes, real /proc.

/** The pid of a process that has exited and been reaped: no process has it (until reused). */
function deadPid(): number {
  return Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout);
}

describe('lease owners and PID namespaces', () => {
  const self = ownerId();
  const ns = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))![1]!;

  it('an owner names its PID namespace, and parses back to its host and pid', () => {
    expect(self).toContain(`/${ns}:${process.pid}:`);
    const parsed = parseOwner(self)!;
    expect(parsed.pid).toBe(process.pid);
    expect(parsed.host).not.toContain('/');
  });

  it('in our namespace: a live process is alive, a gone one is dead', () => {
    expect(isLiveLocalOwner(self)).toBe(true);
    expect(isDeadOwner(self)).toBe(false);
    const gone = self.replace(`:${process.pid}:`, `:${deadPid()}:`);
    expect(isDeadOwner(gone)).toBe(true);
  });

  it('in another namespace, or written before namespaces were recorded: neither alive nor dead here (lease expiry only)', () => {
    const pid = deadPid();
    const [machine] = self.split(':');
    const foreign = `${machine!.replace(/\/\d+$/, '/1')}:${pid}:1`;
    const old = `${machine!.replace(/\/\d+$/, '')}:${pid}:1`;
    for (const owner of [foreign, old, `${machine!.replace(/\/\d+$/, '/1')}:${process.pid}:1`]) {
      expect(isDeadOwner(owner), owner).toBe(false);
      expect(isLiveLocalOwner(owner), owner).toBe(false);
    }
    // The old form still reads: status shows its host.
    expect(parseOwner(old)).toMatchObject({ host: parseOwner(self)!.host, pid });
  });
});
