/** The statements of the SQLite store's hook verbs (sqlite-hooks.ts). */
export const HOOK_SQL = {
  /** @batchId @hook @mark */
  hookRow: 'SELECT * FROM batch_hooks WHERE batch_id = @batchId AND hook = @hook AND end_mark = @mark',
  /** @batchId @hook — the ends this hook ran for already (its id's number is the next). */
  hookEnds: 'SELECT count(*) AS n FROM batch_hooks WHERE batch_id = @batchId AND hook = @hook',
  /** @batchId @hook @mark @id @command @owner @now @expires */
  insertHook: `
    INSERT INTO batch_hooks (batch_id, hook, end_mark, id, command, owner, runs, lease_expires_at, started_at)
    VALUES (@batchId, @hook, @mark, @id, @command, @owner, 1, @expires, @now)`,
  /** @batchId @hook @mark @owner @now @expires — a start takes over a run whose owner died. */
  takeOverHook: `
    UPDATE batch_hooks SET owner = @owner, runs = runs + 1, lease_expires_at = @expires, started_at = @now
    WHERE batch_id = @batchId AND hook = @hook AND end_mark = @mark AND ended_at IS NULL`,
  /** @batchId @hook @mark @owner @expires */
  renewHook: `
    UPDATE batch_hooks SET lease_expires_at = @expires
    WHERE batch_id = @batchId AND hook = @hook AND end_mark = @mark AND owner = @owner AND ended_at IS NULL`,
  /** @batchId @hook @mark @owner @endedAt @exitCode @signal @output */
  endHook: `
    UPDATE batch_hooks SET ended_at = @endedAt, exit_code = @exitCode, signal = @signal, output = @output
    WHERE batch_id = @batchId AND hook = @hook AND end_mark = @mark AND owner = @owner AND (ended_at IS NULL OR ended_at = @endedAt)`,
  /** ?batchId */
  hooksOf: 'SELECT * FROM batch_hooks WHERE batch_id = ? ORDER BY started_at DESC, hook',
} as const;
