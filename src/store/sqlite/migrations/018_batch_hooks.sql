-- --on-complete / --on-failure (SPEC §10): each hook's run at each end of a batch, recorded
-- before the command starts, so it runs once across crashes, reruns and hosts. `end_mark` names
-- the end (the batch's last finish and counts then): a batch that ends again after more work
-- runs its hooks again. `id` is the stable id the command is given; `runs` counts its starts
-- (2 when a run was killed while it ran and the next start ran it again). `owner` holds it
-- while it runs, renewing `lease_expires_at`; `ended_at` set: it is done.
CREATE TABLE batch_hooks (
  batch_id         INTEGER NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
  hook             TEXT    NOT NULL,
  end_mark         TEXT    NOT NULL,
  id               TEXT    NOT NULL,
  command          TEXT    NOT NULL,
  owner            TEXT    NOT NULL,
  runs             INTEGER NOT NULL,
  lease_expires_at REAL    NOT NULL,
  started_at       REAL    NOT NULL,
  ended_at         REAL,
  exit_code        INTEGER,
  signal           TEXT,
  output           TEXT,
  PRIMARY KEY (batch_id, hook, end_mark)
) STRICT;
