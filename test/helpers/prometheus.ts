// The Prometheus text that `metrics` and `run --metrics-file` write, read back: promtool's verdict,
// the samples, and how they compare with `status --json` and with what the store holds (SPEC §6).
import { spawnSync } from 'node:child_process';
import { expect } from 'vitest';
import type { BatchStatus } from '../../src/status/batch-status.js';
import type { Counts } from '../../src/store/task-store.js';
import { mainIn } from './in-process-cli.js';
import { missing } from './services.js';

const PROMTOOL = !missing('promtool', 'the `promtool check metrics` assertions');

/** promtool accepts the text: exit 0 and nothing said (no lint warning about HELP, TYPE, names). */
export function expectPromtoolAccepts(text: string): void {
  if (!PROMTOOL) return;
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  expect(`${r.stdout}${r.stderr}`.trim(), 'promtool says').toBe('');
  expect(r.status).toBe(0);
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The sample lines of the text format, label values unescaped (\\, \", \n). */
export function samples(text: string): Sample[] {
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

/** The value of the one sample named `name` whose labels include `labels`. */
export function value(all: Sample[], name: string, labels: Record<string, string>): number {
  const found = all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  expect(found, `${name} ${JSON.stringify(labels)}`).toHaveLength(1);
  return found[0]!.value;
}

/** The attempt counters and the duration histogram: what a run counts itself rather than reading. */
export const attemptLines = (text: string) => text.split('\n').filter((l) => /^splitdance_attempt(s_total|_duration_seconds_)/.test(l));

/** The same lines as `metrics --batch BATCH` reads them from the store. */
export async function storedAttemptLines(cwd: string, batch: string, db: string[]): Promise<string[]> {
  const r = await mainIn(cwd, ['metrics', '--batch', batch, ...db]);
  expect(r.code, r.stderr).toBe(0);
  return attemptLines(r.stdout);
}

/** What `status --json` prints (the fields compared here). */
export type StatusJson = Pick<BatchStatus, keyof Counts | 'upToDate' | 'done'> & { updatedAt: string };

/** The metrics of `batch` say what `status --json` says of it; returns what it said. */
export async function expectMatchesStatus(all: Sample[], batch: string, cwd: string, db: string[]): Promise<StatusJson> {
  const r = await mainIn(cwd, ['status', '--json', '--batch', batch, ...db]);
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
