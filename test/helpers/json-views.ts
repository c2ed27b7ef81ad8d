// What `tasks --json`, `status --json` and `show --json` say, called in-process: tests read the store through them, not SQL.
import { expect } from 'vitest';
import { join, resolve } from 'node:path';
import type { AttemptRow, BatchRecord, TaskRow } from '../../src/store/records.js';
import { openStore } from '../../src/store/open-store.js';
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

/**
 * Every attempt of every task of a batch (`--batch NAME` in `args`, else the latest; `--db PATH`,
 * else the folder's store), as `show --json` lists them, read through the store's verbs
 * (`listTasks`, `attemptsOf`) on one read-only connection, each with its task's row.
 */
export async function allAttempts(cwd: string, args: string[] = []): Promise<(AttemptRow & { key: string; task: TaskRow })[]> {
  const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
  const db = flag('--db');
  const store = await openStore(db === undefined ? join(cwd, '.splitdance', 'splitdance.db') : resolve(cwd, db), 'existing', { readonly: true });
  expect(store, `a store for ${cwd}`).not.toBeNull();
  try {
    const name = flag('--batch');
    const batch = name === undefined ? await store!.latestBatch() : await store!.findBatch(name);
    expect(batch, `batch ${name ?? '(latest)'}`).toBeDefined();
    const all: (AttemptRow & { key: string; task: TaskRow })[] = [];
    for (const t of (await store!.listTasks({ batchId: batch!.id })).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))) {
      for (const a of await store!.attemptsOf(t.id)) all.push({ ...a, key: t.key, task: t });
    }
    return all;
  } finally {
    await store!.close();
  }
}

/** Every batch the store at `db` holds, read through the store's own verb (`listBatches`), in creation order. */
export async function storedBatches(db: string): Promise<BatchRecord[]> {
  const store = await openStore(db, 'existing', { readonly: true });
  expect(store, `a store at ${db}`).not.toBeNull();
  try {
    return await store!.listBatches();
  } finally {
    await store!.close();
  }
}

/** Until `check` (which may ask the CLI) is true, looking every 20 ms; fails after `timeoutMs`. */
export async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** How many tasks the store holds RUNNING (attempts queued on a slot included), per `tasks --json`; 0 while there is no store or batch yet. */
export async function runningTasks(cwd: string, args: string[] = []): Promise<number> {
  const r = await mainIn(cwd, ['tasks', '--json', '--status', 'RUNNING', ...args]);
  return r.code === 0 ? (JSON.parse(r.stdout) as unknown[]).length : 0;
}

/** The task rows of a batch (`batch`, else the latest) of the store at `db`, through `listTasks`; [] while there is no store or batch yet. */
export async function storedTasks(db: string, batch?: string): Promise<TaskRow[]> {
  const store = await openStore(db, 'existing', { readonly: true }).catch(() => null);
  if (!store) return [];
  try {
    const b = batch === undefined ? await store.latestBatch() : await store.findBatch(batch);
    return b ? await store.listTasks({ batchId: b.id }) : [];
  } catch {
    return []; // a store being created: its tables are not there yet
  } finally {
    await store.close();
  }
}
