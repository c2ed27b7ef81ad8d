/**
 * The JSON text columns both stores share (`needs`, a stored `result`), written and read the
 * same way so a task means the same in SQLite and PostgreSQL.
 */

/** The `needs` column: a JSON list of stage names, NULL for none. */
export function needsColumn(needs: readonly string[] | undefined): string | null {
  return needs?.length ? JSON.stringify(needs) : null;
}

export function parseNeeds(text: string | null): string[] {
  return text === null ? [] : (JSON.parse(text) as string[]);
}

/** A stored handler result: JSON text, NULL when the handler returned nothing. */
function parseResult(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}

/** The inputs of one stage task: the results of the stages it needs, by stage. */
export function inputsByStage(rows: Iterable<{ stage: string; result: string | null }>, into: Record<string, unknown> = {}): Record<string, unknown> {
  for (const r of rows) into[r.stage] = parseResult(r.result);
  return into;
}
