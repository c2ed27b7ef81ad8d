import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../helpers/cli.js';

// Issue 41, item 4: an --exec attempt that exits non-zero by itself with nothing on stderr
// (grep -c finding no match: exit 1, "0" on stdout) is an answer: its task fails at once, no
// retry is waited for, and --print prints it once. Anything on stderr is a fault, retried as
// before. The README's mapping of `parallel --tag -k grep -c ERROR ::: *.log` prints what
// parallel prints.

interface TaskRow {
  key: string;
  status: string;
  attempts: number;
  nextRunAt: string | null;
  lastError: string | null;
}

const tasksOf = async (cwd: string, db?: string): Promise<TaskRow[]> =>
  JSON.parse((await runCli(['tasks', '--json', ...(db ? ['--db', db] : [])], { cwd })).stdout) as TaskRow[];

describe('a quiet failure is an answer, not retried', () => {
  it('`grep -c` on 401 files, a third without a match: the lines GNU parallel prints, in its order, one attempt per file, exit 1', async () => {
    const dir = join(tempDir(), 'logs');
    mkdirSync(dir);
    for (let i = 1; i <= 401; i++) writeFileSync(join(dir, `f${String(i).padStart(3, '0')}.log`), i % 3 === 0 ? 'all fine\n' : 'ERROR one\nINFO\nERROR two\n');
    const r = await runCli(['run', '.', '--include', '*.log', '--exec', 'grep -c ERROR {}', '--print', '--tag', '--keep-order'], { cwd: dir });
    const parallel = spawnSync('/bin/sh', ['-c', 'parallel --will-cite --tag -k grep -c ERROR ::: *.log'], { cwd: dir, encoding: 'utf8' });
    expect(parallel.stdout.split('\n').filter(Boolean)).toHaveLength(401);
    expect(r.stdout).toBe(parallel.stdout);
    expect(r.code, r.stderr).toBe(1);
    expect(parallel.status).not.toBe(0);
    // The time is bounded by design: no attempt waits for a retry (each task had exactly one, none is due later).
    const tasks = await tasksOf(dir);
    expect(tasks).toHaveLength(401);
    expect(tasks.every((t) => t.attempts === 1 && t.nextRunAt === null)).toBe(true);
    const failed = tasks.filter((t) => t.status === 'FAILED');
    expect(failed).toHaveLength(133);
    for (const t of failed) expect(t.lastError).toBe('exit code 1 with nothing on stderr: an answer, not retried; --retry-quiet retries it');
    expect(r.stderr).toContain('FAILED f003.log after 1 attempt: exit code 1 with nothing on stderr: an answer, not retried; --retry-quiet retries it');
  }, 240_000);

  it('a failure that says why on stderr is retried with backoff, and --print prints only its last attempt', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.txt'), 'a\nb\n');
    const exec = 'echo "try {attempt} of {}"; [ {} = a ] && exit 0; echo "service down" >&2; exit 1';
    const r = await runCli(['run', '--items', 'list.txt', '--exec', exec, '--retries', '2', '--backoff', '50ms', '--print', '--keep-order'], { cwd: dir });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toBe('try 1 of a\ntry 3 of b\n');
    expect(r.stderr.split('\n').filter((l) => l === 'service down')).toHaveLength(1); // the last attempt's stderr, printed once
    const b = (await tasksOf(dir)).find((t) => t.key === 'b')!;
    expect(b).toMatchObject({ status: 'FAILED', attempts: 3 });
    expect(b.lastError).toMatch(/exit code 1: service down/);
    const first = await runCli(['logs', 'b', '--attempt', '1'], { cwd: dir });
    expect(first.stdout).toContain('try 1 of b'); // the attempts not printed are in the log
  }, 60_000);

  it('--retry-quiet (and the job field retryQuiet) retries a quiet failure like any other; a signal is never quiet', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.txt'), 'x\n');
    const flag = await runCli(['run', '--items', 'list.txt', '--exec', 'false', '--retries', '2', '--backoff', '10ms', '--retry-quiet', '--batch', 'flag'], { cwd: dir });
    expect(flag.code).toBe(1);
    writeFileSync(join(dir, 'job.json'), JSON.stringify({ items: 'list.txt', exec: 'false', retries: 2, backoff: '10ms', retryQuiet: true }));
    const job = await runCli(['run', '--job', 'job.json', '--batch', 'job'], { cwd: dir });
    expect(job.code).toBe(1);
    const killed = await runCli(['run', '--items', 'list.txt', '--exec', 'kill -TERM $$', '--retries', '2', '--backoff', '10ms', '--batch', 'signal'], { cwd: dir });
    expect(killed.code).toBe(1);
    for (const batch of ['flag', 'job', 'signal']) {
      const [t] = JSON.parse((await runCli(['tasks', '--json', '--batch', batch], { cwd: dir })).stdout) as TaskRow[];
      expect(t, batch).toMatchObject({ status: 'FAILED', attempts: 3 });
    }
  }, 60_000);
});
