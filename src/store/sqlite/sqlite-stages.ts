import { cascadeCancel, cascadeRevive, type Sibling } from '../stage-graph.js';
import { toSibling, type ClaimedDbRow, type SiblingDbRow } from '../db-rows.js';
import type { Statements } from './statements.js';

/**
 * The stage rules of stage-graph.ts applied to SQLite rows, inside the caller's write
 * transaction: one statement reads the siblings of every listed item, one changes them all.
 */

/** The stage tasks of the listed items, by item. */
function siblingsOf(st: Statements, batchId: number, items: string[]): Map<string, Sibling[]> {
  const rows = st.siblings.all({ batchId, items: JSON.stringify(items) }) as (SiblingDbRow & { item_key: string })[];
  const byItem = new Map<string, Sibling[]>();
  for (const r of rows) {
    const group = byItem.get(r.item_key);
    if (group) group.push(toSibling(r));
    else byItem.set(r.item_key, [toSibling(r)]);
  }
  return byItem;
}

/** The distinct items named, without the nulls of tasks outside stages. */
const itemsIn = (items: Iterable<string | null>) => [...new Set(items)].filter((i): i is string => i !== null);

/** Cancels the dependents of the items' failed or cancelled stage tasks (transitively); returns how many. */
export function cascade(st: Statements, batchId: number, items: Iterable<string | null>, now: number): number {
  const named = itemsIn(items);
  if (named.length === 0) return 0;
  const cancel = [...siblingsOf(st, batchId, named).values()].flatMap((siblings) => cascadeCancel(siblings).map((c) => [c.id, c.reason]));
  if (cancel.length === 0) return 0;
  return st.cancelPending.run({ list: JSON.stringify(cancel), now }).changes;
}

/** After retry-failed: dependents cancelled because a need failed wait for it again. */
export function revive(st: Statements, batchId: number, items: Iterable<string | null>): void {
  const named = itemsIn(items);
  if (named.length === 0) return;
  const ids = [...siblingsOf(st, batchId, named).values()].flatMap(cascadeRevive);
  if (ids.length > 0) st.revive.run(JSON.stringify(ids));
}

/** The stored results of the stages each claimed task needs, by task and stage (only tasks with needs are listed). */
export function inputsOf(st: Statements, batchId: number, tasks: ClaimedDbRow[]): Map<number, Record<string, unknown>> {
  const inputs = new Map<number, Record<string, unknown>>();
  const staged = tasks.filter((t) => t.needs !== null && t.item_key !== null);
  if (staged.length === 0) return inputs;
  for (const t of staged) inputs.set(t.id, {});
  const list = JSON.stringify(staged.map((t) => [t.id, t.item_key, t.needs]));
  for (const r of st.inputs.all({ batchId, list }) as { task_id: number; stage: string; result: string | null }[]) {
    inputs.get(r.task_id)![r.stage] = r.result === null ? null : JSON.parse(r.result);
  }
  return inputs;
}
