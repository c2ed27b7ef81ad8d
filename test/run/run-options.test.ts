import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { countBy, dbPathIn } from '../helpers/store.js';
import { allAttempts, statusCounts, storedBatches, tasksJson } from '../helpers/json-views.js';
import { mainIn } from '../helpers/in-process-cli.js';

describe('run options', () => {
  it('--max-failures stops claiming once reached and exits 1 saying why', async () => {
    const p = projectWithFiles(30);
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'sleep 0.1; exit 1', '--retries', '0', '--max-failures', '3', '-j', '1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--max-failures reached/);
    const counts = await statusCounts(p.dir);
    const failed = counts.FAILED ?? 0;
    // The attempt queued behind the third failure may have started before the coordinator
    // counted it (SPEC §5): it finishes, and may fail too; nothing after it starts.
    expect(failed).toBeGreaterThanOrEqual(3);
    expect(failed).toBeLessThanOrEqual(4);
    const pending = counts.PENDING ?? 0;
    expect(pending).toBe(30 - failed);
  });

  it('-j 50% runs half the CPUs as workers; --max-tasks-per-worker recycles them', async () => {
    const p = projectWithFiles(8);
    const r = await mainIn(p.dir, ['run', 'src', '--handler', handler('ok'), '-j', '50%', '--max-tasks-per-worker', '2']);
    expect(r.code, r.stderr).toBe(0);
    const pids = countBy(await allAttempts(p.dir), (a) => String(a.pid));
    expect(pids.size).toBeGreaterThanOrEqual(4);
    expect([...pids.values()].every((n) => n <= 2)).toBe(true);
  });

  it('--max-worker-memory replaces a leaking worker', async () => {
    const p = projectWithFiles(12);
    const r = await mainIn(p.dir, ['run', 'src', '--handler', handler('leak'), '-j', '1', '--max-worker-memory', '60MiB']);
    expect(r.code, r.stderr).toBe(0);
    const results = (await tasksJson(p.dir)).map((x) => (x.result as { held: number }).held);
    // Each task leaks 2 MB into a module-level array; a fresh worker starts the count again.
    expect(Math.max(...results)).toBeLessThan(12);
    expect(new Set((await allAttempts(p.dir)).map((a) => a.pid)).size).toBeGreaterThan(1);
  });

  it('a bare re-run reuses the stored handler; a new handler replaces it for unfinished tasks and says so', async () => {
    const p = projectWithFiles(3);
    const first = await mainIn(p.dir, ['run', 'src', '--exec', 'exit 5', '--retries', '0']);
    expect(first.code).toBe(1);
    writeFileSync(join(p.src, 'extra.log'), 'x');
    const again = await mainIn(p.dir, ['run', 'src']);
    expect(again.code).toBe(1);
    const rows = await tasksJson(p.dir, ['--key', 'extra.log']);
    expect(rows[0]!.lastError).toBe('exit code 5 with nothing on stderr: an answer, not retried; --retry-quiet retries it');
    await mainIn(p.dir, ['retry-failed']);
    const fixed = await mainIn(p.dir, ['run', 'src', '--exec', 'true']);
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(fixed.stderr).toMatch(/handler changed for the unfinished tasks/);
    const { job } = (await storedBatches(dbPathIn(p.dir)))[0]!;
    expect(job.handler).toEqual({ kind: 'exec', template: 'true' });
    expect(job.version).toBe(1);
  });

  it('--batch expands {date}; status groups failures by error signature', async () => {
    const p = projectWithFiles(5);
    const r = await mainIn(p.dir, ['run', 'src', '--batch', 'nightly-{date}', '--exec', 'echo cannot open /data/{name} at line $$ >&2; exit 2', '--retries', '0']);
    expect(r.code).toBe(1);
    const d = new Date();
    const today = `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
    expect((await storedBatches(dbPathIn(p.dir))).map((b) => b.name)).toEqual([`nightly-${today}`]);
    const human = await mainIn(p.dir, ['status']);
    expect(human.stdout).toMatch(new RegExp(`batch nightly-${today}`));
    expect(human.stdout).toMatch(/5 × exit code 2: cannot open \/data\/f00\d\.log at line \d+ {3}e\.g\. f000\.log/);
    const json = JSON.parse((await mainIn(p.dir, ['status', '--json', '--batch', 'nightly-{date}'])).stdout);
    expect(json.topErrors).toHaveLength(1);
    expect(json.topErrors[0].count).toBe(5);
  });
});

describe('changing the retry budget on a rerun (found by the model test)', () => {
  it('a lower --retries fails waiting retries that used it all instead of running them past it', async () => {
    const p = projectWithFiles(1);
    const first = await mainIn(p.dir, ['run', 'src', '--exec', 'exit 1', '--retry-quiet', '--retries', '1', '--backoff', '1h', '--no-wait']);
    expect(first.code).toBe(3);
    const second = await mainIn(p.dir, ['run', 'src', '--retries', '0']);
    expect(second.code).toBe(1);
    const [t] = await tasksJson(p.dir);
    expect(t).toMatchObject({ status: 'FAILED', attempts: 1, maxAttempts: 1 });
    expect(t!.lastError).toMatch(/retry budget lowered/);
  });
});
