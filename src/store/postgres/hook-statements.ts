/** The statements of the PostgreSQL store's hook verbs (pg-hooks.ts). */

/** Merged into statements.ts's set; `s` is the store's quoted schema. */
export function hookStatements(s: string) {
  return {
    /**
     * $1 batchId $2 hook $3 mark $4 command $5 owner $6 now $7 expires $8 identity — records the
     * run unless one is recorded for this end (a concurrent start's insert wins, this one does
     * nothing); its id numbers the ends this hook ran for.
     */
    insertHook: `
      INSERT INTO ${s}.batch_hooks (batch_id, hook, end_mark, id, command, owner, runs, lease_expires_at, started_at)
      SELECT $1::bigint, $2::text, $3::text, $8::text || '-' || $1::bigint || '-' || $2::text || '-' || (1 + (SELECT count(*) FROM ${s}.batch_hooks WHERE batch_id = $1::bigint AND hook = $2::text)),
        $4::text, $5::text, 1, $7::double precision, $6::double precision
      ON CONFLICT (batch_id, hook, end_mark) DO NOTHING RETURNING id`,
    /** $1 batchId $2 hook $3 mark — the run, locked for the takeover check. */
    hookRow: `SELECT * FROM ${s}.batch_hooks WHERE batch_id = $1 AND hook = $2 AND end_mark = $3 FOR UPDATE`,
    /** $1 batchId $2 hook $3 mark $4 owner $5 now $6 expires */
    takeOverHook: `
      UPDATE ${s}.batch_hooks SET owner = $4, runs = runs + 1, lease_expires_at = $6, started_at = $5
      WHERE batch_id = $1 AND hook = $2 AND end_mark = $3 AND ended_at IS NULL`,
    /** $1 batchId $2 hook $3 mark $4 owner $5 expires */
    renewHook: `
      UPDATE ${s}.batch_hooks SET lease_expires_at = $5
      WHERE batch_id = $1 AND hook = $2 AND end_mark = $3 AND owner = $4 AND ended_at IS NULL`,
    /** $1 batchId $2 hook $3 mark $4 owner $5 endedAt $6 exitCode $7 signal $8 output */
    endHook: `
      UPDATE ${s}.batch_hooks SET ended_at = $5, exit_code = $6, signal = $7, output = $8
      WHERE batch_id = $1 AND hook = $2 AND end_mark = $3 AND owner = $4 AND (ended_at IS NULL OR ended_at = $5)`,
    /** $1 batchId */
    hooksOf: `SELECT * FROM ${s}.batch_hooks WHERE batch_id = $1 ORDER BY started_at DESC, hook`,
  };
}
