import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { missing } from '../helpers/services.js';

// bench/reap.c, the bench's CPU meter: it must count the CPU of processes that outlive their
// parent (a detached helper), or splitdance's own CPU per task would read too low.
const HAS_CC = !missing('cc', 'the bench CPU meter tests');
let dir = '';
let meter = '';
beforeAll(() => {
  if (!HAS_CC) return;
  dir = mkdtempSync(join(tmpdir(), 'sd-reap-'));
  meter = join(dir, 'reap');
  const cc = spawnSync(process.env.CC || 'cc', ['-O2', '-std=c11', '-Wall', '-o', meter, join(ROOT, 'bench/reap.c')], { encoding: 'utf8' });
  expect(cc.status, cc.stderr).toBe(0);
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Runs the meter; its stdout is "<user µs> <system µs> <exit code> <signal>". */
function reap(...argv: string[]) {
  const r = spawnSync(meter, argv, { encoding: 'utf8' });
  const [user, sys, code, signal] = r.stdout.trim().split(' ').map(Number);
  return { status: r.status, cpuUs: user! + sys!, code, signal };
}

// Some CPU: a shell loop that counts (about 0.1-0.3 s of CPU on machines of this kind).
const BUSY = 'i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done';

describe.runIf(HAS_CC)('the bench CPU meter (bench/reap.c)', () => {
  it('waits for a process its command left behind and counts that process CPU', () => {
    const flag = join(dir, 'orphan-finished');
    const inForeground = reap('sh', '-c', BUSY);
    // The shell exits at once; its background child is orphaned mid-loop (and holds no pipe
    // of ours open, so only the meter's waiting can keep us waiting for it).
    const orphaned = reap('sh', '-c', `( ${BUSY}; : > '${flag}' ) 2>/dev/null & exit 0`);
    expect(orphaned).toMatchObject({ status: 0, code: 0, signal: 0 });
    expect(existsSync(flag)).toBe(true);
    // The same loop: its CPU is counted, not lost with its parent (a generous margin for noise).
    expect(orphaned.cpuUs).toBeGreaterThan(inForeground.cpuUs / 4);
  });

  it("reports the command's exit code and the signal that killed it, and exits with them", () => {
    expect(reap('sh', '-c', 'exit 3')).toMatchObject({ status: 3, code: 3, signal: 0 });
    expect(reap('sh', '-c', 'kill -9 $$')).toMatchObject({ status: 137, code: -1, signal: 9 });
    expect(reap('/nonexistent/command')).toMatchObject({ status: 127, code: 127, signal: 0 });
  });
});
