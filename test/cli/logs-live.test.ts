import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { waitFor } from '../helpers/cli.js';
import { mainIn, startIn } from '../helpers/in-process-cli.js';
import { projectWithFiles } from '../helpers/project.js';

// `logs KEY` on a running attempt prints its output so far; `logs --follow KEY` follows it until
// the attempt ends (tail -f, pueue's follow). `logs --batch B` and `logs --failed` print many
// tasks' last attempts in one process, each after its key.

/** Prints a line, waits for the file `go` in `dir`, prints another: a running attempt with output so far. */
const waiting = (dir: string) => `echo "first {key}"; while [ ! -e ${dir}/go ]; do sleep 0.05; done; echo "second {key}"`;

describe('logs of a running attempt', () => {
  it('logs KEY prints the output so far, and logs --follow KEY the rest until the attempt ends', async () => {
    const p = projectWithFiles(1);
    const run = startIn(p.dir, ['run', 'src', '--exec', waiting(p.dir), '-j', '1']);
    onTestFinished(async () => {
      writeFileSync(join(p.dir, 'go'), ''); // however the test ends, the attempt ends, and the run with it
      await run.done;
    });
    // The attempt runs once its log has its first line; `logs` shows it then (before: "printed nothing").
    let soFar = '';
    const until = Date.now() + 30_000;
    while (!soFar.includes('first') && Date.now() < until) {
      const r = await mainIn(p.dir, ['logs', 'f000.log']);
      soFar = r.code === 0 ? r.stdout : '';
      if (!soFar) await new Promise((res) => setTimeout(res, 100));
    }
    expect(soFar).toBe('first f000.log\n');
    const follow = startIn(p.dir, ['logs', '--follow', 'f000.log']);
    let ended = false;
    void follow.done.then(() => (ended = true));
    await waitFor(() => follow.stdout().includes('first'), 30_000, 'the follower to print what is there');
    expect(ended).toBe(false); // still following: the attempt has not ended
    writeFileSync(join(p.dir, 'go'), '');
    const f = await follow.done;
    expect(f.code, f.stderr).toBe(0);
    expect(f.stdout).toBe('first f000.log\nsecond f000.log\n');
    expect((await run.done).code).toBe(0);
  });
});

describe('logs of many tasks', () => {
  it('--batch B prints every task\'s last attempt after its key; --failed only the failed ones', async () => {
    const p = projectWithFiles(3);
    const exec = 'echo "out of {key}"; test {key} != f001.log || { echo "f001 broke" >&2; exit 1; }';
    const r = await mainIn(p.dir, ['run', 'src', '--exec', exec, '--retries', '0', '--batch', 'many', '-j', '1']);
    expect(r.code).toBe(1);
    const all = await mainIn(p.dir, ['logs', '--batch', 'many']);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toBe(
      '==> f000.log <==\nout of f000.log\n==> f001.log <==\nout of f001.log\nf001 broke\n==> f002.log <==\nout of f002.log\n',
    );
    const failed = await mainIn(p.dir, ['logs', '--failed']);
    expect(failed.code, failed.stderr).toBe(0);
    expect(failed.stdout).toBe('==> f001.log <==\nout of f001.log\nf001 broke\n');
    const none = await mainIn(p.dir, ['logs']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('--failed');
  });
});
