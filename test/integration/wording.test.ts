import { describe, expect, it } from 'vitest';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';

// A run's verdict says what happened: "failures" only when tasks failed. Counts read as English:
// "1 task", "1 worker", "1 attempt", never "1 tasks" or "attempt(s)".

describe('the words of a run', () => {
  it('cancel during a run ends "finished with cancelled tasks", not "with failures", when none failed', async () => {
    const p = projectWithFiles(20);
    const run = startCli(['run', 'src', '--exec', 'sleep 0.2', '-j', '1'], { cwd: p.dir });
    let stderr = '';
    run.stderr!.on('data', (b) => (stderr += b));
    await waitFor(() => stderr.includes('batch '), 30_000, 'the run to start');
    const cancel = await runCli(['cancel'], { cwd: p.dir });
    expect(cancel.code, cancel.stderr).toBe(0);
    const r = await run.result;
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^finished with cancelled tasks: \d+ succeeded, 0 failed, \d+ cancelled of 20 /m);
    expect(r.stderr).not.toContain('failures');
  });

  it('one task, one worker, one attempt, one running attempt', async () => {
    const p = projectWithFiles(1);
    const r = await runCli(['run', 'src', '--exec', 'true'], { cwd: p.dir });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/: 1 task \(1 new\) from .*, 1 worker, store /);
    const shown = await runCli(['show', 'f000.log'], { cwd: p.dir });
    expect(shown.stdout).toContain('SUCCESS, 1 attempt counted of 4');
    expect(shown.stdout).toContain('1 attempt recorded:');
    expect(shown.stdout + r.stderr).not.toContain('(s)');

    const q = projectWithFiles(1);
    const slow = startCli(['run', 'src', '--exec', 'sleep 1', '--grace', '30s'], { cwd: q.dir });
    let err = '';
    slow.stderr!.on('data', (b) => (err += b));
    await waitFor(() => err.includes('1 worker'), 30_000, 'the run to start');
    await new Promise((res) => setTimeout(res, 300)); // the attempt is running
    slow.kill('SIGTERM');
    const s = await slow.result;
    expect(s.code).toBe(143);
    expect(s.stderr).toMatch(/SIGTERM: no new tasks; waiting up to 30s for 1 running attempt\nsend SIGTERM again to stop at once\n/);
  });
});
