import { cascadeCancel, cascadeRevive } from '../shared/stage-graph.js';
import type { Sql } from './pg-db.js';
import { toSibling, type SiblingDbRow } from '../shared/db-rows.js';
import type { Statements } from './statements.js';
import { inputsByStage } from '../shared/json-columns.js';

/**
 * The stage rules of stage-graph.ts applied to PostgreSQL rows, inside the caller's
 * transaction. An item's siblings are locked (id order) before they are judged.
 */

/** Cancels the dependents of the items' failed or cancelled stage tasks (transitively); returns how many. */
export async function cascade(sql: Sql, st: Statements, batchId: number, items: Iterable<string | null>, now: number): Promise<number> {
  let n = 0;
  for (const item of new Set(items)) {
    if (item === null) continue;
    const siblings = (await sql.rows<SiblingDbRow>(st.siblings, [batchId, item])).map(toSibling);
    for (const c of cascadeCancel(siblings)) n += await sql.run(st.cancelPending, [c.id, c.reason, now]);
  }
  return n;
}

/** After retry-failed: dependents cancelled because a need failed wait for it again. */
export async function revive(sql: Sql, st: Statements, batchId: number, items: Iterable<string | null>): Promise<void> {
  for (const item of new Set(items)) {
    if (item === null) continue;
    const ids = cascadeRevive((await sql.rows<SiblingDbRow>(st.siblings, [batchId, item])).map(toSibling));
    if (ids.length) await sql.run(st.revive, [ids]);
  }
}

/** The stored results of the stages a claimed task needs, by stage. */
export async function inputsOf(sql: Sql, st: Statements, t: { batch_id: number; item_key: string | null; needs: string | null }): Promise<Record<string, unknown>> {
  if (t.needs === null || t.item_key === null) return {};
  const rows = await sql.rows<{ stage: string; result: string | null }>(st.inputs, [t.batch_id, t.item_key, t.needs]);
  return inputsByStage(rows);
}
