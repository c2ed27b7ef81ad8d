/** The hook verbs of the PostgreSQL store (hook-records.ts); times on the server's clock. */
import type { HookEnd, HookKind, HookRecord, HookTake } from '../hook-records.js';
import { hookHold, hookIdPrefix, toHook, type HookDbRow, type OwnerJudge } from '../shared/hook-rows.js';
import type { Sql } from './pg-db.js';
import type { Statements } from './statements.js';

/** takeHook's transaction, `t.now` on the server's clock; `identity` the store's. */
export async function takeHook(sql: Sql, st: Statements, t: HookTake, identity: string, judge: OwnerJudge): Promise<{ taken: boolean; row: HookDbRow }> {
  const key = [t.batchId, t.hook, t.endMark];
  const expires = t.now + t.leaseMs;
  // hookId's shape, built in the statement so the count and the insert are one.
  const inserted = await sql.rows<{ id: string }>(st.insertHook, [...key, t.command, t.owner, t.now, expires, hookIdPrefix(identity)]);
  const [row] = await sql.rows<HookDbRow>(st.hookRow, key);
  const hold = inserted.length > 0 ? 'ours' : hookHold(row!, t.owner, t.now, judge);
  if (hold !== 'take') return { taken: hold === 'ours', row: row! };
  await sql.run(st.takeOverHook, [...key, t.owner, t.now, expires]);
  const [after] = await sql.rows<HookDbRow>(st.hookRow, key);
  return { taken: true, row: after! };
}

export async function renewHook(sql: Sql, st: Statements, batchId: number, hook: HookKind, mark: string, owner: string, expires: number): Promise<boolean> {
  return (await sql.run(st.renewHook, [batchId, hook, mark, owner, expires])) > 0;
}

export async function endHook(sql: Sql, st: Statements, batchId: number, hook: HookKind, mark: string, owner: string, end: HookEnd): Promise<boolean> {
  return (await sql.run(st.endHook, [batchId, hook, mark, owner, end.endedAt, end.exitCode, end.signal, end.output])) > 0;
}

export async function hooksOf(sql: Sql, st: Statements, batchId: number, fromServer: (ms: number) => number): Promise<HookRecord[]> {
  return (await sql.rows<HookDbRow>(st.hooksOf, [batchId])).map((r) => toHook(r, fromServer));
}
