import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/cli.js';
import { mainIn, startIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';

// A run's verdict says what happened: "failures" only when tasks failed. Counts read as English:
// "1 task", "1 worker", "1 attempt", never "1 tasks" or "attempt(s)". Called in-process; the note
// a signal to the CLI prints: test/e2e/signal-wording.test.ts.

describe('the words of a run', () => {
  it('cancel during a run ends "finished with cancelled tasks", not "with failures", when none failed', async () => {
    const p = projectWithFiles(20);
    const run = startIn(p.dir, ['run', 'src', '--exec', 'sleep 0.2', '-j', '1']);
    await waitFor(() => run.stderr().includes('batch '), 30_000, 'the run to start');
    const cancel = await mainIn(p.dir, ['cancel']);
    expect(cancel.code, cancel.stderr).toBe(0);
    const r = await run.done;
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^finished with cancelled tasks: \d+ succeeded, 0 failed, \d+ cancelled of 20 /m);
    expect(r.stderr).not.toContain('failures');
  }, 60_000);

  it('one task, one worker, one attempt', async () => {
    const p = projectWithFiles(1);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true']);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/: 1 task \(1 new\) from .*, 1 worker, store /);
    const shown = await mainIn(p.dir, ['show', 'f000.log']);
    expect(shown.stdout).toContain('SUCCESS, 1 attempt counted of 4');
    expect(shown.stdout).toContain('1 attempt recorded:');
    expect(shown.stdout + r.stderr).not.toContain('(s)');
  });
});
