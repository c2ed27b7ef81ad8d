import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';

// `logs KEY` on a running attempt prints its output so far; `logs --follow KEY` follows it until
// the attempt ends (tail -f, pueue's follow). `logs --batch B` and `logs --failed` print many
// tasks' last attempts in one process, each after its key.

/** Prints a line, waits for the file `go`, prints another: a running attempt with output so far. */
const WAITING = 'echo "first {key}"; while [ ! -e go ]; do sleep 0.05; done; echo "second {key}"';

describe('logs of a running attempt', () => {
  it('logs KEY prints the output so far, and logs --follow KEY the rest until the attempt ends', async () => {
    const p = projectWithFiles(1);
    const run = startCli(['run', 'src', '--exec', WAITING, '-j', '1'], { cwd: p.dir });
    onTestFinished(() => {
      writeFileSync(join(p.dir, 'go'), ''); // however the test ends, the attempt may end
      run.kill('SIGTERM');
    });
    // The attempt runs once its log has its first line; `logs` shows it then (before: "printed nothing").
    let soFar = '';
    const until = Date.now() + 30_000;
    while (!soFar.includes('first') && Date.now() < until) {
      const r = await runCli(['logs', 'f000.log'], { cwd: p.dir });
      soFar = r.code === 0 ? r.stdout : '';
      if (!soFar) await new Promise((res) => setTimeout(res, 100));
    }
    expect(soFar).toBe('first f000.log\n');
    const follow = startCli(['logs', '--follow', 'f000.log'], { cwd: p.dir });
    let followed = '';
    follow.stdout!.on('data', (b) => (followed += b));
    await waitFor(() => followed.includes('first'), 30_000, 'the follower to print what is there');
    expect(follow.exitCode).toBe(null); // still following: the attempt has not ended
    writeFileSync(join(p.dir, 'go'), '');
    const f = await follow.result;
    expect(f.code, f.stderr).toBe(0);
    expect(f.stdout).toBe('first f000.log\nsecond f000.log\n');
    expect((await run.result).code).toBe(0);
  });
});

describe('logs of many tasks', () => {
  it('--batch B prints every task\'s last attempt after its key; --failed only the failed ones', async () => {
    const p = projectWithFiles(3);
    const exec = 'echo "out of {key}"; test {key} != f001.log || { echo "f001 broke" >&2; exit 1; }';
    const r = await runCli(['run', 'src', '--exec', exec, '--retries', '0', '--batch', 'many', '-j', '1'], { cwd: p.dir });
    expect(r.code).toBe(1);
    const all = await runCli(['logs', '--batch', 'many'], { cwd: p.dir });
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toBe(
      '==> f000.log <==\nout of f000.log\n==> f001.log <==\nout of f001.log\nf001 broke\n==> f002.log <==\nout of f002.log\n',
    );
    const failed = await runCli(['logs', '--failed'], { cwd: p.dir });
    expect(failed.code, failed.stderr).toBe(0);
    expect(failed.stdout).toBe('==> f001.log <==\nout of f001.log\nf001 broke\n');
    const none = await runCli(['logs'], { cwd: p.dir });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('--failed');
  });
});
