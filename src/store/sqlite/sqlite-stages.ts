import { cascadeCancel, cascadeRevive, type Sibling } from '../shared/stage-graph.js';
import { toSibling, type ClaimedDbRow, type SiblingDbRow } from '../shared/db-rows.js';
import type { Statements } from './statements.js';
import { inputsByStage } from '../shared/json-columns.js';

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

/**
 * Items per pair of statements: a tick's group fits in one, and a `cancel` of a million
 * stage tasks never makes one statement (and its undo log, kept in memory) span the batch.
 */
const ITEM_CHUNK = 1000;

/** The distinct items named, without the nulls of tasks outside stages, in chunks. */
function* chunksOf(items: Iterable<string | null>): Generator<string[]> {
  const named = [...new Set(items)].filter((i): i is string => i !== null);
  for (let i = 0; i < named.length; i += ITEM_CHUNK) yield named.slice(i, i + ITEM_CHUNK);
}

/** Cancels the dependents of the items' failed or cancelled stage tasks (transitively); returns how many. */
export function cascade(st: Statements, batchId: number, items: Iterable<string | null>, now: number): number {
  let n = 0;
  for (const chunk of chunksOf(items)) {
    const cancel = [...siblingsOf(st, batchId, chunk).values()].flatMap((siblings) => cascadeCancel(siblings).map((c) => [c.id, c.reason]));
    if (cancel.length > 0) n += st.cancelPending.run({ list: JSON.stringify(cancel), now }).changes;
  }
  return n;
}

/** After retry-failed: dependents cancelled because a need failed wait for it again. */
export function revive(st: Statements, batchId: number, items: Iterable<string | null>): void {
  for (const chunk of chunksOf(items)) {
    const ids = [...siblingsOf(st, batchId, chunk).values()].flatMap(cascadeRevive);
    if (ids.length > 0) st.revive.run(JSON.stringify(ids));
  }
}

/** The stored results of the stages each claimed task needs, by task and stage (only tasks with needs are listed). */
export function inputsOf(st: Statements, batchId: number, tasks: ClaimedDbRow[]): Map<number, Record<string, unknown>> {
  const inputs = new Map<number, Record<string, unknown>>();
  const staged = tasks.filter((t) => t.needs !== null && t.item_key !== null);
  if (staged.length === 0) return inputs;
  for (const t of staged) inputs.set(t.id, {});
  const list = JSON.stringify(staged.map((t) => [t.id, t.item_key, t.needs]));
  for (const r of st.inputs.all({ batchId, list }) as { task_id: number; stage: string; result: string | null }[]) inputsByStage([r], inputs.get(r.task_id));
  return inputs;
}
