-- As SQLite's migration 016. --adaptive (SPEC §10): the level each run or worker of a batch
-- keeps running at now, for status and watch to show. One row per coordinator, refreshed while
-- it runs, removed at its end.
CREATE TABLE IF NOT EXISTS adaptive_levels (
  batch_id   BIGINT  NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
  owner      TEXT    NOT NULL,
  level      INTEGER NOT NULL,
  max_level  INTEGER NOT NULL,
  pace       DOUBLE PRECISION,
  updated_at DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (batch_id, owner)
);
