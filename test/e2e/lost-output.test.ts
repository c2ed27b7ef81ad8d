import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli.js';
import { mainIn } from '../helpers/in-process-cli.js';
import { statusCounts } from '../helpers/json-views.js';
import { projectWithFiles } from '../helpers/project.js';

/** Every batch's tasks by status (`tasks --json` of each batch, in this process). */
async function statuses(dir: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const b of JSON.parse((await mainIn(dir, ['batches', '--json'])).stdout) as { batch: string }[]) {
    for (const [status, n] of Object.entries(await statusCounts(dir, ['--batch', b.batch]))) counts[status] = (counts[status] ?? 0) + n;
  }
  return counts;
}

/** Runs the CLI with stdout (and stderr, if given) on fds the test chose. */
function runOnFds(args: string[], cwd: string, stdout: number | 'pipe', stderr: number | 'pipe', onFirstLine?: (close: () => void) => void) {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', stdout, stderr] });
  let err = '';
  child.stderr?.on('data', (b) => (err += b));
  if (onFirstLine && child.stdout) {
    let out = '';
    const onData = (b: Buffer) => {
      out += b;
      if (!out.includes('\n')) return;
      child.stdout!.off('data', onData);
      onFirstLine(() => child.stdout!.destroy()); // what `| head -1` does: the read end goes away
    };
    child.stdout.on('data', onData);
  }
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise<{ code: number | null; stderr: string }>((done) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stderr: err });
    }),
  );
}

describe('a closed or full stdout/stderr', () => {
  it('run --json into head -1: the batch runs to its end and the exit code is its verdict', async () => {
    const p = projectWithFiles(24);
    const r = await runOnFds(['run', 'src', '--exec', 'sleep 0.05', '-j', '2', '--json'], p.dir, 'pipe', 'pipe', (close) => close());
    expect(await statuses(p.dir)).toEqual({ SUCCESS: 24 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/cannot write to stdout \(its reader closed it\).*the batch ran on/);

    // A failing batch keeps its verdict too: never exit 0 for work that did not succeed.
    const q = projectWithFiles(6);
    const f = await runOnFds(['run', 'src', '--exec', 'sleep 0.05; test {key} != f003.log', '--retries', '0', '-j', '2', '--json'], q.dir, 'pipe', 'pipe', (close) => close());
    expect(await statuses(q.dir)).toEqual({ SUCCESS: 5, FAILED: 1 });
    expect(f.code).toBe(1);
  });

  it('run > /dev/full 2>&1 (a cron log on a full disk): no crash, every task runs, exit 0', async () => {
    const p = projectWithFiles(20);
    const full = openSync('/dev/full', 'w');
    try {
      for (const mode of [[], ['--json']]) {
        const r = await runOnFds(['run', 'src', '--exec', 'true', '-j', '2', '--batch', `b${mode.length}`, ...mode], p.dir, full, full);
        expect(r.code).toBe(0);
      }
      expect(await statuses(p.dir)).toEqual({ SUCCESS: 40 });

      // `worker` the same: a failed batch reset, then worked with both streams on the full device.
      const q = projectWithFiles(8);
      expect((await mainIn(q.dir, ['run', 'src', '--exec', `test -e ${q.dir}/go`, '--retries', '0'])).code).toBe(1);
      expect((await mainIn(q.dir, ['retry-failed'])).code).toBe(0);
      closeSync(openSync(`${q.dir}/go`, 'w'));
      const w = await runOnFds(['worker', '-j', '2'], q.dir, full, full);
      expect(w.code).toBe(0);
      expect(await statuses(q.dir)).toEqual({ SUCCESS: 8 });
    } finally {
      closeSync(full);
    }
  });

  it('status and tasks > /dev/full: one line naming stdout, exit 1, no stack trace', async () => {
    const p = projectWithFiles(3);
    expect((await mainIn(p.dir, ['run', 'src', '--exec', 'true'])).code).toBe(0);
    const full = openSync('/dev/full', 'w');
    try {
      for (const args of [['status'], ['status', '--json'], ['tasks'], ['tasks', '--json'], ['batches'], ['show', 'f001.log']]) {
        const r = await runOnFds(args, p.dir, full, 'pipe');
        expect(r.code, args.join(' ')).toBe(1);
        expect(r.stderr).toMatch(/^splitdance: error: cannot write to stdout \(no space left on its device\)$/m);
        expect(r.stderr).not.toMatch(/\n\s+at |ENOSPC: no space/);
      }
    } finally {
      closeSync(full);
    }
  });
});
