/** The hook verbs of the SQLite store (hook-records.ts): each one transaction of the store's connection. */
import type { HookEnd, HookKind, HookRecord, HookTake } from '../hook-records.js';
import { hookHold, hookId, toHook, type HookDbRow, type OwnerJudge } from '../shared/hook-rows.js';
import type { SqliteConn } from './sqlite-conn.js';

export function takeHook(c: SqliteConn, t: HookTake, judge: OwnerJudge): { taken: boolean; record: HookRecord } {
  return c.write(() => {
    const key = { batchId: t.batchId, hook: t.hook, mark: t.endMark };
    const row = c.st.hookRow.get(key) as HookDbRow | undefined;
    const at = { owner: t.owner, now: t.now, expires: t.now + t.leaseMs };
    let taken = true;
    if (!row) {
      const n = (c.st.hookEnds.get(key) as { n: number }).n + 1;
      c.st.insertHook.run({ ...key, ...at, id: hookId(c.identity, t.batchId, t.hook, n), command: t.command });
    } else {
      const hold = hookHold(row, t.owner, t.now, judge);
      if (hold === 'take') c.st.takeOverHook.run({ ...key, ...at });
      taken = hold !== 'held';
    }
    return { taken, record: toHook(c.st.hookRow.get(key) as HookDbRow) };
  });
}

export function renewHook(c: SqliteConn, batchId: number, hook: HookKind, mark: string, owner: string, expires: number): boolean {
  return c.write(() => c.st.renewHook.run({ batchId, hook, mark, owner, expires }).changes > 0);
}

export function endHook(c: SqliteConn, batchId: number, hook: HookKind, mark: string, owner: string, end: HookEnd): boolean {
  return c.write(() => c.st.endHook.run({ batchId, hook, mark, owner, endedAt: end.endedAt, exitCode: end.exitCode, signal: end.signal, output: end.output }).changes > 0);
}

export function hooksOf(c: SqliteConn, batchId: number): HookRecord[] {
  return c.read(() => (c.st.hooksOf.all(batchId) as HookDbRow[]).map((r) => toHook(r)));
}
