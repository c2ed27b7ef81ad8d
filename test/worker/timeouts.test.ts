import { describe, expect, it } from 'vitest';
import { handler, waitFor } from '../helpers/cli.js';
import { jsonOf, mainIn } from '../helpers/in-process-cli.js';
import { liveProcesses } from '../helpers/procs.js';
import { projectWithFiles } from '../helpers/project.js';
import { attemptsIn, tasksIn } from '../helpers/read-store.js';
import { dbPathIn } from '../helpers/store.js';

// --timeout: an attempt past it is killed with its whole process group, SIGKILL after SIGTERM.

const show = (dir: string, key: string): Promise<any> => jsonOf(dir, ['show', key]);

describe('timeouts', () => {
  it('--timeout kills a `sleep 1000` attempt and its group: TIMEOUT, retried, FAILED, no survivor', async () => {
    const p = projectWithFiles(1);
    const marker = `1000.${process.pid}1`;
    const r = await mainIn(p.dir, ['run', 'src', '--exec', `sleep ${marker}`, '--timeout', '1s', '--retries', '1', '--backoff', '100ms']);
    expect(r.code).toBe(1);
    const t = await show(p.dir, 'f000.log');
    expect(t.status).toBe('FAILED');
    expect(t.attempts.map((a: { outcome: string }) => a.outcome)).toEqual(['TIMEOUT', 'TIMEOUT']);
    expect(t.attempts[0].durationMs).toBeGreaterThanOrEqual(1000);
    expect(t.attempts[0].durationMs).toBeLessThan(5000);
    await waitFor(() => liveProcesses(`sleep ${marker}`).length === 0, 1000, 'no sleep survivor');
  });

  it('an attempt ignoring SIGTERM is killed with SIGKILL, including its background children', async () => {
    const p = projectWithFiles(1);
    const marker = `1000.${process.pid}2`;
    const r = await mainIn(p.dir, ['run', 'src', '--exec', `trap '' TERM; sleep ${marker} & sleep ${marker}; wait`, '--timeout', '500ms', '--retries', '0']);
    expect(r.code).toBe(1);
    const t = await show(p.dir, 'f000.log');
    expect(t.attempts[0].outcome).toBe('TIMEOUT');
    await waitFor(() => liveProcesses(`sleep ${marker}`).length === 0, 1000, 'no sleep survivor');
  });

  it('a module handler that ignores ctx.signal is killed with its worker and recorded TIMEOUT', async () => {
    const p = projectWithFiles(2);
    const r = await mainIn(p.dir, ['run', 'src', '--handler', handler('hang'), '--timeout', '300ms', '--retries', '0', '-j', '1']);
    expect(r.code).toBe(1);
    const rows = await attemptsIn(dbPathIn(p.dir));
    // The attempt queued behind the first (SPEC §5) never started when its worker was killed: INTERRUPTED, not counted.
    expect(rows.map((x) => x.outcome).filter((o) => o !== 'INTERRUPTED')).toEqual(['TIMEOUT', 'TIMEOUT']);
    expect(rows.filter((x) => x.outcome === 'INTERRUPTED').length).toBeLessThanOrEqual(1);
    expect((await tasksIn(dbPathIn(p.dir))).map((x) => ({ status: x.status, attempts: x.attempts }))).toEqual([
      { status: 'FAILED', attempts: 1 },
      { status: 'FAILED', attempts: 1 },
    ]);
  });
});
