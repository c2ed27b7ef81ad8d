-- As SQLite's migration 018. --on-complete / --on-failure (SPEC §10): each hook's run at each
-- end of a batch, recorded before the command starts, so it runs once across crashes, reruns
-- and hosts; see there for the columns.
CREATE TABLE IF NOT EXISTS batch_hooks (
  batch_id         BIGINT  NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
  hook             TEXT    NOT NULL,
  end_mark         TEXT    NOT NULL,
  id               TEXT    NOT NULL,
  command          TEXT    NOT NULL,
  owner            TEXT    NOT NULL,
  runs             INTEGER NOT NULL,
  lease_expires_at DOUBLE PRECISION NOT NULL,
  started_at       DOUBLE PRECISION NOT NULL,
  ended_at         DOUBLE PRECISION,
  exit_code        INTEGER,
  signal           TEXT,
  output           TEXT,
  PRIMARY KEY (batch_id, hook, end_mark)
);
