import { describe, expect, it } from 'vitest';
import { startCli, waitFor } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';

// What the CLI says when it is sent SIGTERM reads as English: "1 running attempt", never
// "attempt(s)". The other words of a run: test/cli/wording.test.ts.

describe('the words of a run', () => {
  it('one running attempt: the SIGTERM note counts it in English', async () => {
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
