import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BatchStatus } from '../../src/status/batch-status.js';
import type { Counts } from '../../src/store/task-store.js';
import { describe, expect, it } from 'vitest';
import { runCli, startCli, waitFor } from '../helpers/cli.js';
import { PG_URL, pgQuery, pgSchemas } from '../helpers/pg.js';
import { projectWithFiles } from '../helpers/project.js';
import { missing } from '../helpers/services.js';

// SPEC §6: `metrics` prints the Prometheus text format that `promtool check metrics` accepts;
// `run --metrics-file` keeps the same for its batch, atomically, every progress interval and at exit.

const PROMTOOL = !missing('promtool', 'the `promtool check metrics` assertions');

/** promtool accepts the text: exit 0 and nothing said (no lint warning about HELP, TYPE, names). */
function expectPromtoolAccepts(text: string): void {
  if (!PROMTOOL) return;
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  expect(`${r.stdout}${r.stderr}`.trim(), 'promtool says').toBe('');
  expect(r.status).toBe(0);
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The sample lines of the text format, label values unescaped (\\, \", \n). */
function samples(text: string): Sample[] {
  return text
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(l);
      expect(m, `sample line ${l}`).not.toBeNull();
      const labels: Record<string, string> = {};
      for (const [, k, v] of (m![2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
        labels[k!] = v!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      }
      return { name: m![1]!, labels, value: Number(m![3]) };
    });
}

function value(all: Sample[], name: string, labels: Record<string, string>): number {
  const found = all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  expect(found, `${name} ${JSON.stringify(labels)}`).toHaveLength(1);
  return found[0]!.value;
}

/** The attempt counters and the duration histogram: what a run counts itself rather than reading. */
const attemptLines = (text: string) => text.split('\n').filter((l) => /^splitdance_attempt(s_total|_duration_seconds_)/.test(l));

/** The same lines as `metrics` reads them from the store. */
async function storedAttemptLines(cwd: string, db: string[]): Promise<string[]> {
  const r = await runCli(['metrics', '--batch', 'slow', ...db], { cwd });
  expect(r.code, r.stderr).toBe(0);
  return attemptLines(r.stdout);
}

/** What `status --json` prints (the fields compared here). */
type StatusJson = Pick<BatchStatus, keyof Counts | 'upToDate' | 'done'> & { updatedAt: string };

/** The metrics of `batch` say what `status --json` says of it. */
async function expectMatchesStatus(all: Sample[], batch: string, cwd: string, db: string[]): Promise<StatusJson> {
  const r = await runCli(['status', '--json', '--batch', batch, ...db], { cwd });
  const s = JSON.parse(r.stdout) as StatusJson;
  // status exits with the batch's verdict (SPEC §6).
  expect(r.code, r.stderr).toBe(!s.done ? 3 : s.failed + s.cancelled > 0 ? 1 : 0);
  const tasks = (status: string) => value(all, 'splitdance_tasks', { batch, status });
  expect({
    PENDING: tasks('PENDING'),
    RUNNING: tasks('RUNNING'),
    SUCCESS: tasks('SUCCESS'),
    FAILED: tasks('FAILED'),
    CANCELLED: tasks('CANCELLED'),
    retrying: value(all, 'splitdance_tasks_retrying', { batch }),
    upToDate: value(all, 'splitdance_tasks_up_to_date', { batch }),
    done: value(all, 'splitdance_batch_done', { batch }),
    updatedAtMs: Math.round(value(all, 'splitdance_batch_last_update_timestamp_seconds', { batch }) * 1000),
  }).toEqual({
    PENDING: s.pending + s.retrying,
    RUNNING: s.running,
    SUCCESS: s.succeeded,
    FAILED: s.failed,
    CANCELLED: s.cancelled,
    retrying: s.retrying,
    upToDate: s.upToDate,
    done: s.done ? 1 : 0,
    updatedAtMs: Date.parse(s.updatedAt),
  });
  return s;
}

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
      const r = await runCli(['run', 'src', '--batch', name, '--exec', EXEC, '--retries', '0', '-j', '2', ...db], { cwd: p.dir });
      expect(r.code, r.stderr).toBe(1);
    }
    const r = await runCli(['metrics', ...db], { cwd: p.dir });
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
    const one = await runCli(['metrics', '--batch', 'back\\slash', ...db], { cwd: p.dir });
    expect(one.code, one.stderr).toBe(0);
    expectPromtoolAccepts(one.stdout);
    expect([...new Set(samples(one.stdout).map((s) => s.labels.batch))]).toEqual(['back\\slash']);
  });

  it('run --metrics-file keeps the file promtool accepts, with the final counts at exit and no temporary file left', async () => {
    const p = projectWithFiles(4);
    const db = dbArgs();
    const name = 'night "one"\\two\nthree';
    const r = await runCli(['run', 'src', '--batch', name, '--exec', EXEC, '--retries', '0', '--metrics-file', 'out/m/splitdance.prom', ...db], { cwd: p.dir });
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
    const run = startCli(
      ['run', 'src', '--batch', 'slow', '--exec', 'sleep 0.1', '-j', '1', '--progress-interval', '200ms', '--max-runtime', '2s', '--metrics-file', file, ...db],
      { cwd: p.dir },
    );
    await waitFor(() => succeeded() >= 0, 20_000, 'the first metrics file');
    const first = succeeded();
    await waitFor(() => succeeded() > first, 20_000, 'a later metrics file with more tasks done');
    expect(run.exitCode, 'the run was still going').toBeNull();
    const r = await run.result;
    expect(r.code, r.stderr).toBe(3);
    const text = readFileSync(file, 'utf8');
    expectPromtoolAccepts(text);
    const s = await expectMatchesStatus(samples(text), 'slow', p.dir, db);
    expect(s.done).toBe(false);
    expect(s.succeeded).toBeGreaterThan(0);
    expect(value(samples(text), 'splitdance_attempts_total', { batch: 'slow', outcome: 'SUCCESS' })).toBe(s.succeeded);
    expect(readdirSync(p.dir).filter((f) => f.includes('.tmp'))).toEqual([]);
    expect(attemptLines(text)).toEqual(await storedAttemptLines(p.dir, db));

    // The next run starts from the attempts already stored and adds its own: the same as the store's.
    const again = await runCli(['run', 'src', '--batch', 'slow', '--exec', 'sleep 0.01', '-j', '4', '--metrics-file', file, ...db], { cwd: p.dir });
    expect(again.code, again.stderr).toBe(0);
    const final = readFileSync(file, 'utf8');
    expect(value(samples(final), 'splitdance_attempts_total', { batch: 'slow', outcome: 'SUCCESS' })).toBe(40);
    expect(attemptLines(final)).toEqual(await storedAttemptLines(p.dir, db));
  });

  it('run --metrics-file writes the file once more when SIGINT ends the run', async () => {
    const p = projectWithFiles(40);
    const db = dbArgs();
    const file = join(p.dir, 'm.prom');
    // No write between the first and the last: the interval is longer than the run.
    const run = startCli(['run', 'src', '--batch', 'slow', '--exec', 'sleep 0.1', '-j', '2', '--progress-interval', '1h', '--metrics-file', file, ...db], { cwd: p.dir });
    await waitFor(() => existsSync(file), 20_000, 'the first metrics file');
    for (let done = 0; done < 2; ) {
      const st = await runCli(['status', '--json', '--batch', 'slow', ...db], { cwd: p.dir });
      done = st.code === 0 || st.code === 3 ? (JSON.parse(st.stdout) as StatusJson).succeeded : 0;
    }
    run.kill('SIGINT');
    const r = await run.result;
    expect(r.code, r.stderr).toBe(130);
    const text = readFileSync(file, 'utf8');
    expectPromtoolAccepts(text);
    const s = await expectMatchesStatus(samples(text), 'slow', p.dir, db);
    expect(s).toMatchObject({ running: 0, done: false });
    expect(s.succeeded).toBeGreaterThanOrEqual(2);
    expect(attemptLines(text)).toEqual(await storedAttemptLines(p.dir, db));
  });

  it('an unwritable metrics path is exit 2 before the store is written', async () => {
    const p = projectWithFiles(2);
    const db = dbArgs();
    writeFileSync(join(p.dir, 'blocker'), 'a file, not a folder\n');
    const r = await runCli(['run', 'src', '--exec', 'true', '--metrics-file', 'blocker/m/splitdance.prom', ...db], { cwd: p.dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--metrics-file');
    expect(r.stderr).toContain('is not a folder');
    writeFileSync(join(p.dir, 'job.json'), JSON.stringify({ source: 'src', exec: 'true', metricsFile: 'blocker/x.prom' }));
    const j = await runCli(['run', '--job', 'job.json', ...db], { cwd: p.dir });
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
