// What `tasks --json`, `status --json` and `show --json` say, called in-process: tests read the store through them, not SQL.
import { expect } from 'vitest';
import type { BatchRecord } from '../../src/store/records.js';
import { openExistingStore } from '../../src/store/open-store.js';
import { mainIn } from './in-process-cli.js';

export interface TaskJson {
  key: string;
  status: string;
  attempts: number;
  maxAttempts: number;
  lastError: string | null;
  nextRunAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  result: unknown;
}

export interface AttemptJson {
  attempt: number;
  outcome: string | null;
  startedAt: string;
  endedAt: string | null;
  workerId: string;
  host: string;
  pid: number | null;
  error: string | null;
  outputTail: string | null;
}

/** `tasks --json ARGS`, which must succeed. */
export async function tasksJson(cwd: string, args: string[] = []): Promise<TaskJson[]> {
  const r = await mainIn(cwd, ['tasks', '--json', ...args]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as TaskJson[];
}

/** How many tasks have each status (`tasks --json`). */
export async function statusCounts(cwd: string, args: string[] = []): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const t of await tasksJson(cwd, args)) counts[t.status] = (counts[t.status] ?? 0) + 1;
  return counts;
}

/** `status --json ARGS` (its exit code is the batch's verdict: 0, 1 or 3). */
export async function statusJson(cwd: string, args: string[] = []): Promise<Record<string, number | boolean | string | unknown[]>> {
  const r = await mainIn(cwd, ['status', '--json', ...args]);
  expect([0, 1, 3], r.stderr).toContain(r.code);
  return JSON.parse(r.stdout) as Record<string, number | boolean | string | unknown[]>;
}

/** The attempts of every task (`show --json` of each key of `tasks --json`), in key order. */
export async function allAttempts(cwd: string, args: string[] = []): Promise<(AttemptJson & { key: string })[]> {
  const all: (AttemptJson & { key: string })[] = [];
  for (const t of await tasksJson(cwd, args)) {
    const r = await mainIn(cwd, ['show', '--json', ...args, '--', t.key]);
    expect(r.code, r.stderr).toBe(0);
    for (const a of (JSON.parse(r.stdout) as { attempts: AttemptJson[] }).attempts) all.push({ ...a, key: t.key });
  }
  return all;
}

/** Every batch the store at `db` holds, read through the store's own verb (`listBatches`), in creation order. */
export async function storedBatches(db: string): Promise<BatchRecord[]> {
  const store = await openExistingStore(db, { readonly: true });
  expect(store, `a store at ${db}`).not.toBeNull();
  try {
    return await store!.listBatches();
  } finally {
    await store!.close();
  }
}
