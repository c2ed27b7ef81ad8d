import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler, runCli } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { dbPathIn, query } from '../helpers/store.js';

describe('run options', () => {
  it('--max-failures stops claiming once reached and exits 1 saying why', async () => {
    const p = projectWithFiles(30);
    const r = await runCli(['run', 'src', '--exec', 'sleep 0.1; exit 1', '--retries', '0', '--max-failures', '3', '-j', '1'], { cwd: p.dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--max-failures reached/);
    const failed = query<{ n: number }>(dbPathIn(p.dir), "SELECT count(*) AS n FROM tasks WHERE status = 'FAILED'")[0]!.n;
    // The attempt queued behind the third failure may have started before the coordinator
    // counted it (SPEC §5): it finishes, and may fail too; nothing after it starts.
    expect(failed).toBeGreaterThanOrEqual(3);
    expect(failed).toBeLessThanOrEqual(4);
    const pending = query<{ n: number }>(dbPathIn(p.dir), "SELECT count(*) AS n FROM tasks WHERE status = 'PENDING'")[0]!.n;
    expect(pending).toBe(30 - failed);
  });

  it('-j 50% runs half the CPUs as workers; --max-tasks-per-worker recycles them', async () => {
    const p = projectWithFiles(8);
    const r = await runCli(['run', 'src', '--handler', handler('ok'), '-j', '50%', '--max-tasks-per-worker', '2'], { cwd: p.dir });
    expect(r.code, r.stderr).toBe(0);
    const pids = query<{ pid: number; n: number }>(dbPathIn(p.dir), 'SELECT pid, count(*) AS n FROM attempts GROUP BY pid');
    expect(pids.length).toBeGreaterThanOrEqual(4);
    expect(pids.every((x) => x.n <= 2)).toBe(true);
  });

  it('--max-worker-memory replaces a leaking worker', async () => {
    const p = projectWithFiles(12);
    const r = await runCli(['run', 'src', '--handler', handler('leak'), '-j', '1', '--max-worker-memory', '60MiB'], { cwd: p.dir });
    expect(r.code, r.stderr).toBe(0);
    const results = query<{ result: string }>(dbPathIn(p.dir), 'SELECT result FROM tasks ORDER BY id').map((x) => JSON.parse(x.result).held);
    // Each task leaks 2 MB into a module-level array; a fresh worker starts the count again.
    expect(Math.max(...results)).toBeLessThan(12);
    expect(query(dbPathIn(p.dir), 'SELECT DISTINCT pid FROM attempts').length).toBeGreaterThan(1);
  });

  it('a bare re-run reuses the stored handler; a new handler replaces it for unfinished tasks and says so', async () => {
    const p = projectWithFiles(3);
    const first = await runCli(['run', 'src', '--exec', 'exit 5', '--retries', '0'], { cwd: p.dir });
    expect(first.code).toBe(1);
    writeFileSync(join(p.src, 'extra.log'), 'x');
    const again = await runCli(['run', 'src'], { cwd: p.dir });
    expect(again.code).toBe(1);
    const rows = query<{ task_key: string; last_error: string }>(dbPathIn(p.dir), "SELECT task_key, last_error FROM tasks WHERE task_key = 'extra.log'");
    expect(rows[0]!.last_error).toBe('exit code 5 with nothing on stderr: an answer, not retried; --retry-quiet retries it');
    await runCli(['retry-failed'], { cwd: p.dir });
    const fixed = await runCli(['run', 'src', '--exec', 'true'], { cwd: p.dir });
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(fixed.stderr).toMatch(/handler changed for the unfinished tasks/);
    const job = JSON.parse(query<{ job: string }>(dbPathIn(p.dir), 'SELECT job FROM batches')[0]!.job);
    expect(job.handler).toEqual({ kind: 'exec', template: 'true' });
    expect(job.version).toBe(1);
  });

  it('--batch expands {date}; status groups failures by error signature', async () => {
    const p = projectWithFiles(5);
    const r = await runCli(['run', 'src', '--batch', 'nightly-{date}', '--exec', 'echo cannot open /data/{name} at line $$ >&2; exit 2', '--retries', '0'], {
      cwd: p.dir,
    });
    expect(r.code).toBe(1);
    const d = new Date();
    const today = `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
    expect(query(dbPathIn(p.dir), 'SELECT name FROM batches')).toEqual([{ name: `nightly-${today}` }]);
    const human = await runCli(['status'], { cwd: p.dir });
    expect(human.stdout).toMatch(new RegExp(`batch nightly-${today}`));
    expect(human.stdout).toMatch(/5 × exit code 2: cannot open \/data\/f00\d\.log at line \d+ {3}e\.g\. f000\.log/);
    const json = JSON.parse((await runCli(['status', '--json', '--batch', 'nightly-{date}'], { cwd: p.dir })).stdout);
    expect(json.topErrors).toHaveLength(1);
    expect(json.topErrors[0].count).toBe(5);
  });
});

describe('changing the retry budget on a rerun (found by the model test)', () => {
  it('a lower --retries fails waiting retries that used it all instead of running them past it', async () => {
    const p = projectWithFiles(1);
    const first = await runCli(['run', 'src', '--exec', 'exit 1', '--retry-quiet', '--retries', '1', '--backoff', '1h', '--no-wait'], { cwd: p.dir });
    expect(first.code).toBe(3);
    const second = await runCli(['run', 'src', '--retries', '0'], { cwd: p.dir });
    expect(second.code).toBe(1);
    const [t] = query<{ status: string; attempts: number; max_attempts: number; last_error: string }>(
      dbPathIn(p.dir),
      'SELECT status, attempts, max_attempts, last_error FROM tasks',
    );
    expect(t).toMatchObject({ status: 'FAILED', attempts: 1, max_attempts: 1 });
    expect(t!.last_error).toMatch(/retry budget lowered/);
  });
});
