import Database from 'better-sqlite3';
import { logEntries } from '../helpers/store.js';

/**
 * The invariants of RELIABILITY.md, checked against the store file and the side-effect
 * log after a faulted run has been resumed to the end. Returns the violations found
 * (empty when all hold) so a test can print every one at once.
 */
export interface Scenario {
  dbPath: string;
  /** The keys the source derives (I1). */
  keys: string[];
  /** --retries of the run (I5). */
  retries: number;
  /** The side-effect log of fixtures/handlers/record.mjs, if the run used it (I3, I4). */
  logPath?: string;
  /** Coordinator or worker kills during the scenario, each of which may hit up to `concurrency` keys (I4). */
  kills?: number;
  concurrency?: number;
  /** Attempts a slot may hold at once, running and queued (SPEC §5; default 2: one running, one queued). */
  heldPerSlot?: number;
  /** Terminal states allowed (default SUCCESS only). */
  terminal?: string[];
  /** The WAL was damaged on purpose (R14): committed history may be lost, so attempt counts are not compared (I4). */
  historyMayRollBack?: boolean;
}

export interface TaskRow {
  id: number;
  task_key: string;
  status: string;
  attempts: number;
}
export interface AttemptRow {
  task_id: number;
  id: number;
  outcome: string | null;
}

export function checkInvariants(s: Scenario): string[] {
  const db = new Database(s.dbPath, { readonly: true, fileMustExist: true });
  try {
    const tasks = db.prepare('SELECT id, task_key, status, attempts FROM tasks').all() as TaskRow[];
    const attempts = db.prepare('SELECT task_id, id, outcome FROM attempts ORDER BY id').all() as AttemptRow[];
    const v = checkHistory(tasks, attempts, s);
    // I6 integrity and pragmas.
    const integrity = db.pragma('integrity_check', { simple: true });
    if (integrity !== 'ok') v.push(`I6: integrity_check says ${integrity}`);
    const mode = db.pragma('journal_mode', { simple: true });
    if (mode !== 'wal') v.push(`I6: journal_mode is ${mode}, not wal`);
    return v;
  } finally {
    db.close();
  }
}

/**
 * I1–I5 on rows read from any store (the PostgreSQL tests read theirs with SQL of their own):
 * `attempts` in id order.
 */
export function checkHistory(tasks: TaskRow[], attempts: AttemptRow[], s: Omit<Scenario, 'dbPath'>): string[] {
  const v: string[] = [];
  // I1 no loss: exactly the derived keys, none left PENDING or RUNNING.
  const stored = new Set(tasks.map((t) => t.task_key));
  for (const k of s.keys) if (!stored.has(k)) v.push(`I1: key ${k} missing from the store`);
  const expected = new Set(s.keys);
  for (const k of stored) if (!expected.has(k)) v.push(`I1: unexpected key ${k} in the store`);
  for (const t of tasks) if (t.status === 'PENDING' || t.status === 'RUNNING') v.push(`I1: ${t.task_key} left ${t.status}`);

  // I2 one terminal state per key; nothing after a SUCCESS; the history agrees.
  const allowed = s.terminal ?? ['SUCCESS'];
  const byTask = new Map<number, AttemptRow[]>();
  for (const a of attempts) byTask.set(a.task_id, [...(byTask.get(a.task_id) ?? []), a]);
  for (const t of tasks) {
    if (!allowed.includes(t.status) && t.status !== 'PENDING' && t.status !== 'RUNNING') v.push(`I2: ${t.task_key} ended ${t.status}`);
    const hist = byTask.get(t.id) ?? [];
    const open = hist.filter((a) => a.outcome === null);
    if (open.length) v.push(`I2: ${t.task_key} has ${open.length} attempt(s) never ended`);
    const successes = hist.filter((a) => a.outcome === 'SUCCESS');
    if (successes.length > 1 && !s.historyMayRollBack) v.push(`I2: ${t.task_key} has ${successes.length} SUCCESS attempts`);
    const last = hist.at(-1);
    if (t.status === 'SUCCESS' && last?.outcome !== 'SUCCESS') v.push(`I2: ${t.task_key} is SUCCESS but its last attempt is ${last?.outcome}`);
    if (t.status === 'FAILED' && (!last || last.outcome === 'SUCCESS')) v.push(`I2: ${t.task_key} is FAILED but its last attempt is ${last?.outcome}`);
    // I5 bounded retries: crash reclaims included.
    if (t.attempts > 1 + s.retries) v.push(`I5: ${t.task_key} has ${t.attempts} attempts > 1 + ${s.retries}`);
  }

  if (s.logPath) {
    const entries = logEntries(s.logPath);
    // I3 no concurrent double execution: the canary and the completed intervals.
    for (const e of entries) if (e.type === 'double') v.push(`I3: ${e.key} ran in pid ${e.pid} while pid ${e.holder} held it`);
    const intervals = new Map<string, [number, number][]>();
    for (const e of entries) if (e.type === 'end') intervals.set(e.key, [...(intervals.get(e.key) ?? []), [e.start, e.end]]);
    for (const [key, list] of intervals) {
      list.sort((a, b) => a[0] - b[0]);
      for (let i = 1; i < list.length; i++) {
        if (list[i]![0] < list[i - 1]![1]) v.push(`I3: ${key} ran twice at once (${list[i - 1]} and ${list[i]})`);
      }
    }
    // I4 attempt accounting: observed starts ≤ recorded attempts ≤ starts + kills that hit the key.
    if (!s.historyMayRollBack) {
      const starts = new Map<string, number>();
      for (const e of entries) if (e.type === 'start') starts.set(e.key, (starts.get(e.key) ?? 0) + 1);
      let unstarted = 0;
      for (const t of tasks) {
        const recorded = (byTask.get(t.id) ?? []).length;
        const seen = starts.get(t.task_key) ?? 0;
        if (seen > recorded) v.push(`I4: ${t.task_key} started ${seen} times but only ${recorded} attempts are recorded`);
        unstarted += Math.max(0, recorded - seen);
      }
      // A kill may hit every attempt its slots hold: the running ones and those queued behind
      // them (SPEC §5: claimed, so counted, when handed over).
      const budget = (s.kills ?? 0) * (s.concurrency ?? 1) * (s.heldPerSlot ?? 2);
      if (unstarted > budget) v.push(`I4: ${unstarted} recorded attempts never started, more than ${budget} (kills × concurrency × attempts held per slot)`);
    }
  }
  return v;
}
