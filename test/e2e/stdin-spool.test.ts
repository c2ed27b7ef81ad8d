import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCli, startCli, tempDir, waitFor } from '../helpers/cli.js';
import { processesWithEnv } from '../helpers/procs.js';
import { dbPathIn, runningCount } from '../helpers/store.js';

// `run -` copies its stdin list into a private folder of $TMPDIR (src/split/stdin-spool.ts).
// A run SIGKILLed while it ran tasks, or while it read stdin, used to leave that copy (0600,
// the whole list) behind for good: 12 kills, 12 copies. The copy goes once the tasks are
// enqueued; one left by a killed run is removed by the next `run -`; a signal that kills the
// run mid-read removes it first. Each test gives the runs a $TMPDIR of their own to count in.

const spools = (tmp: string) => readdirSync(tmp).filter((n) => n.startsWith('splitdance-stdin-'));

function project() {
  const dir = tempDir();
  const tmp = join(dir, 'tmp');
  mkdirSync(tmp);
  return { dir, tmp, env: { TMPDIR: tmp, SD_MARK: dir } };
}

/** `run -` whose stdin stays open: it is still reading its list. */
function readingRun(p: ReturnType<typeof project>) {
  const child = spawn(process.execPath, [BIN, 'run', '-', '--exec', 'true'], { cwd: p.dir, env: { ...process.env, ...p.env }, stdio: ['pipe', 'ignore', 'ignore'] });
  child.stdin.on('error', () => {}); // killed before it read everything
  child.stdin.write('a\nb\n');
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
  return { child, exited };
}

const copyHolds = (tmp: string, bytes: number) => () => spools(tmp).some((s) => existsSync(join(tmp, s, 'items')) && statSync(join(tmp, s, 'items')).size >= bytes);

describe('the copy of a `run -` list', () => {
  it('is gone while the tasks run, so a run SIGKILLed then leaves none', async () => {
    const p = project();
    const run = startCli(['run', '-', '--exec', 'sleep 30', '-j', '1'], { cwd: p.dir, env: p.env, input: 'a\nb\nc\n' });
    await waitFor(() => runningCount(dbPathIn(p.dir)) >= 1, 20_000, 'a running task');
    expect(spools(p.tmp), 'the list is stored with its tasks: no copy while they run').toEqual([]);
    run.kill('SIGKILL');
    await run.result;
    expect(spools(p.tmp)).toEqual([]);
    await waitFor(() => processesWithEnv(p.dir).length === 0, 10_000, 'no process of the run left');
  });

  it("left by a run SIGKILLed while it read stdin is removed by the next `run -`; a live run's copy is kept", async () => {
    const p = project();
    const killed = readingRun(p);
    await waitFor(copyHolds(p.tmp, 4), 20_000, 'the list to be copied');
    killed.child.kill('SIGKILL');
    await killed.exited;
    const dead = spools(p.tmp);
    expect(dead, 'a SIGKILLed run cannot remove its copy').toHaveLength(1);

    // The next `run -` removes it as it starts; while it still reads, its own copy is a live run's.
    const live = readingRun(p);
    await waitFor(() => !spools(p.tmp).includes(dead[0]!) && spools(p.tmp).length === 1 && copyHolds(p.tmp, 4)(), 20_000, 'the dead copy gone, the new one made');
    const mine = spools(p.tmp);
    const next = await runCli(['run', '-', '--exec', 'true', '--batch', 'next'], { cwd: p.dir, env: p.env, input: 'x\n' });
    expect(next.code, next.stderr).toBe(0);
    expect(spools(p.tmp), 'a live run keeps its copy').toEqual(mine);

    live.child.stdin.end();
    expect((await live.exited).code).toBe(0);
    expect(spools(p.tmp)).toEqual([]);
  });

  it('is removed when a signal kills the run while it reads stdin', async () => {
    const p = project();
    const run = readingRun(p);
    await waitFor(copyHolds(p.tmp, 4), 20_000, 'the list to be copied');
    run.child.kill('SIGTERM');
    expect(await run.exited).toEqual({ code: null, signal: 'SIGTERM' });
    expect(spools(p.tmp)).toEqual([]);
  });

  it('a $TMPDIR that does not exist is exit 4 naming it and the ways on', async () => {
    const p = project();
    const r = await runCli(['run', '-', '--exec', 'true'], { cwd: p.dir, env: { TMPDIR: join(p.tmp, 'missing') }, input: 'a\n' });
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toMatch(/`run -` could not copy stdin into .*missing \(no such folder, ENOENT\): set TMPDIR to a writable folder/);
    expect(existsSync(dbPathIn(p.dir))).toBe(false);
  });
});
