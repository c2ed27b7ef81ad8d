import Database from 'better-sqlite3';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BatchAttempt, TaskRow } from '../../src/store/records.js';
import { readStore } from './read-store.js';

export const dbPathIn = (dir: string) => join(dir, '.splitdance', 'splitdance.db');

/** Reads the store directly (read-only), the way a suspicious user would. */
export function query<T = Record<string, unknown>>(dbPath: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

export interface SideEffect {
  type: 'end';
  key: string;
  attempt: number;
  pid: number;
  start: number;
  end: number;
  /** A group's call (fixtures/handlers/record-batch.mjs): its id and how many items it holds. */
  call?: string;
  size?: number;
}

export type LogEntry =
  | SideEffect
  | { type: 'start'; key: string; attempt: number; pid: number; at: number; call?: string; size?: number }
  | { type: 'double'; key: string; pid: number; holder: number };

/**
 * Every line of the side-effect log written by fixtures/handlers/record.mjs. Read while the run
 * lives, its last line may be a write still in progress: only whole lines count.
 */
export function logEntries(path: string): LogEntry[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .slice(0, -1)
    .filter(Boolean)
    .map((l) => JSON.parse(l) as LogEntry);
}

/** The completed attempts in the side-effect log. */
export function sideEffects(path: string): SideEffect[] {
  return logEntries(path).filter((e): e is SideEffect => e.type === 'end');
}

export function countBy<T>(items: T[], key: (t: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const i of items) m.set(key(i), (m.get(key(i)) ?? 0) + 1);
  return m;
}

/** How many tasks are RUNNING now (0 while the store does not exist yet). */
export function runningCount(dbPath: string): number {
  if (!existsSync(dbPath)) return 0;
  try {
    return query<{ n: number }>(dbPath, "SELECT count(*) AS n FROM tasks WHERE status = 'RUNNING'")[0]!.n;
  } catch {
    return 0;
  }
}

/**
 * The latest batch's attempts (or the named batch's), oldest first, read through the store's
 * own verb (`batchAttempts`): the store at `db` (a path or a PostgreSQL URL), opened read-only.
 */
export async function storedAttempts(db: string, batch?: string): Promise<BatchAttempt[]> {
  return readStore(db, async (store) => {
    const b = batch === undefined ? await store.latestBatch() : await store.findBatch(batch);
    if (!b) return [];
    const { attempts } = await store.batchAttempts(b.id, Number.MAX_SAFE_INTEGER);
    return attempts.sort((x, y) => x.id - y.id);
  });
}

/** The latest batch's tasks in creation order (or the named batch's), through `listTasks`. */
export async function storedTasks(db: string, batch?: string): Promise<TaskRow[]> {
  return readStore(db, async (store) => {
    const b = batch === undefined ? await store.latestBatch() : await store.findBatch(batch);
    return b ? store.listTasks({ batchId: b.id }) : [];
  });
}
