import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/cli.js';
import { mainIn, startIn } from '../helpers/in-process-cli.js';
import { PG_URL, pgQuery, pgSchemas } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';
import { attemptLines, expectMatchesStatus, expectPromtoolAccepts, samples, storedAttemptLines, value } from '../helpers/prometheus.js';

// SPEC §6: `metrics` prints the Prometheus text format that `promtool check metrics` accepts;
// `run --metrics-file` keeps the same for its batch, atomically, every progress interval and at exit.
// Every command is called in-process (SIGINT to a run: test/e2e/metrics-sigint.test.ts).

const freshSchema = pgSchemas('metrics');
const backends: [string, () => string[]][] = [['sqlite', () => []]];
if (PG_URL) backends.push(['postgres', () => ['--db', freshSchema().db]]);

// f001 fails (no retries): a batch that ends with failures.
const EXEC = 'case {key} in f001.log) exit 1;; esac';
const NAMES = [`it's "quoted"`, 'back\\slash', 'new\nline'];

describe.each(backends)('metrics (%s)', (_backend, dbArgs) => {
  it('prints every batch in a format promtool accepts, whatever the batch is called, with the values of status --json', async () => {
    const p = projectWithFiles(4);
    const db = dbArgs();
    for (const name of NAMES) {
      const r = await mainIn(p.dir, ['run', 'src', '--batch', name, '--exec', EXEC, '--retries', '0', '-j', '2', ...db]);
      expect(r.code, r.stderr).toBe(1);
    }
    const r = await mainIn(p.dir, ['metrics', ...db]);
    expect(r.code, r.stderr).toBe(0);
    expectPromtoolAccepts(r.stdout);
    expect(r.stdout).toMatch(/^# HELP splitdance_tasks /m);
    expect(r.stdout).toMatch(/^# TYPE splitdance_attempt_duration_seconds histogram$/m);
    const all = samples(r.stdout);
    for (const batch of NAMES) {
      const s = await expectMatchesStatus(all, batch, p.dir, db);
      expect(s).toMatchObject({ succeeded: 3, failed: 1, done: true });
      expect(value(all, 'splitdance_attempts_total', { batch, outcome: 'SUCCESS' })).toBe(3);
      expect(value(all, 'splitdance_attempts_total', { batch, outcome: 'FAILED' })).toBe(1);
      expect(value(all, 'splitdance_attempts_total', { batch, outcome: 'LOST' })).toBe(0);
      expect(value(all, 'splitdance_attempt_duration_seconds_count', { batch })).toBe(4);
      expect(value(all, 'splitdance_attempt_duration_seconds_bucket', { batch, le: '+Inf' })).toBe(4);
      expect(value(all, 'splitdance_attempt_duration_seconds_bucket', { batch, le: '3600' })).toBe(4);
    }

    // --batch narrows to one.
    const one = await mainIn(p.dir, ['metrics', '--batch', 'back\\slash', ...db]);
    expect(one.code, one.stderr).toBe(0);
    expectPromtoolAccepts(one.stdout);
    expect([...new Set(samples(one.stdout).map((s) => s.labels.batch))]).toEqual(['back\\slash']);
  });

  it('run --metrics-file keeps the file promtool accepts, with the final counts at exit and no temporary file left', async () => {
    const p = projectWithFiles(4);
    const db = dbArgs();
    const name = 'night "one"\\two\nthree';
    const r = await mainIn(p.dir, ['run', 'src', '--batch', name, '--exec', EXEC, '--retries', '0', '--metrics-file', 'out/m/splitdance.prom', ...db]);
    expect(r.code, r.stderr).toBe(1);
    const dir = join(p.dir, 'out', 'm');
    expect(readdirSync(dir)).toEqual(['splitdance.prom']);
    const text = readFileSync(join(dir, 'splitdance.prom'), 'utf8');
    expectPromtoolAccepts(text);
    const all = samples(text);
    const s = await expectMatchesStatus(all, name, p.dir, db);
    expect(s).toMatchObject({ succeeded: 3, failed: 1, done: true });
    expect(value(all, 'splitdance_attempts_total', { batch: name, outcome: 'FAILED' })).toBe(1);
    expect(value(all, 'splitdance_attempt_duration_seconds_count', { batch: name })).toBe(4);
  });

  it('run --metrics-file rewrites the file while the run goes, and once more when --max-runtime stops it', async () => {
    const p = projectWithFiles(40);
    const db = dbArgs();
    const file = join(p.dir, 'm.prom');
    const succeeded = () => {
      if (!existsSync(file)) return -1;
      return value(samples(readFileSync(file, 'utf8')), 'splitdance_tasks', { batch: 'slow', status: 'SUCCESS' });
    };
    const run = startIn(p.dir, ['run', 'src', '--batch', 'slow', '--exec', 'sleep 0.1', '-j', '1', '--progress-interval', '200ms', '--max-runtime', '2s', '--metrics-file', file, ...db]);
    let ended = false;
    void run.done.then(() => (ended = true));
    await waitFor(() => succeeded() >= 0, 20_000, 'the first metrics file');
    const first = succeeded();
    await waitFor(() => succeeded() > first, 20_000, 'a later metrics file with more tasks done');
    expect(ended, 'the run was still going').toBe(false);
    const r = await run.done;
    expect(r.code, r.stderr).toBe(3);
    const text = readFileSync(file, 'utf8');
    expectPromtoolAccepts(text);
    const s = await expectMatchesStatus(samples(text), 'slow', p.dir, db);
    expect(s.done).toBe(false);
    expect(s.succeeded).toBeGreaterThan(0);
    expect(value(samples(text), 'splitdance_attempts_total', { batch: 'slow', outcome: 'SUCCESS' })).toBe(s.succeeded);
    expect(readdirSync(p.dir).filter((f) => f.includes('.tmp'))).toEqual([]);
    expect(attemptLines(text)).toEqual(await storedAttemptLines(p.dir, 'slow', db));

    // The next run starts from the attempts already stored and adds its own: the same as the store's.
    const again = await mainIn(p.dir, ['run', 'src', '--batch', 'slow', '--exec', 'sleep 0.01', '-j', '4', '--metrics-file', file, ...db]);
    expect(again.code, again.stderr).toBe(0);
    const final = readFileSync(file, 'utf8');
    expect(value(samples(final), 'splitdance_attempts_total', { batch: 'slow', outcome: 'SUCCESS' })).toBe(40);
    expect(attemptLines(final)).toEqual(await storedAttemptLines(p.dir, 'slow', db));
  });

  it('an unwritable metrics path is exit 2 before the store is written', async () => {
    const p = projectWithFiles(2);
    const db = dbArgs();
    writeFileSync(join(p.dir, 'blocker'), 'a file, not a folder\n');
    const r = await mainIn(p.dir, ['run', 'src', '--exec', 'true', '--metrics-file', 'blocker/m/splitdance.prom', ...db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--metrics-file');
    expect(r.stderr).toContain('is not a folder');
    writeFileSync(join(p.dir, 'job.json'), JSON.stringify({ source: 'src', exec: 'true', metricsFile: 'blocker/x.prom' }));
    const j = await mainIn(p.dir, ['run', '--job', 'job.json', ...db]);
    expect(j.code).toBe(2);
    expect(j.stderr).toContain('"metricsFile"');
    // Nothing was written: no store (SQLite), no schema (PostgreSQL).
    expect(existsSync(join(p.dir, '.splitdance'))).toBe(false);
    if (db.length) {
      const schema = new URL(db[1]!).searchParams.get('schema');
      expect(await pgQuery('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [schema])).toEqual([]);
    }
  });
});
