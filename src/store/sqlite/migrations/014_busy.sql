-- "Busy, try later" (SPEC §10): an attempt whose command exits with a --busy-codes code, or
-- whose handler throws RetryLater, is recorded BUSY and puts its task back without spending
-- an attempt. `busy_since`: since when the task's attempts have answered busy in a row (any
-- other outcome clears it), so --max-busy can end the streak as a failure.
ALTER TABLE tasks ADD COLUMN busy_since INTEGER;
-- A CHECK constraint cannot be altered: the attempts table is made again with BUSY among its
-- outcomes, every row copied (SQLite's own procedure for changing a table's definition).
CREATE TABLE attempts_new (
  id          INTEGER PRIMARY KEY,
  task_id     INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  attempt     INTEGER NOT NULL,
  worker_id   TEXT    NOT NULL,
  host        TEXT    NOT NULL,
  pid         INTEGER,
  owner       TEXT    NOT NULL,
  started_at  INTEGER NOT NULL,
  ended_at    INTEGER,
  outcome     TEXT CHECK (outcome IN ('SUCCESS', 'FAILED', 'TIMEOUT', 'CRASHED', 'LOST', 'INTERRUPTED', 'BUSY')),
  exit_code   INTEGER,
  signal      TEXT,
  error       TEXT,
  duration_ms INTEGER,
  output_tail TEXT,
  log_path    TEXT,
  job_version INTEGER
) STRICT;
INSERT INTO attempts_new (id, task_id, attempt, worker_id, host, pid, owner, started_at, ended_at, outcome, exit_code, signal, error, duration_ms, output_tail, log_path, job_version)
  SELECT id, task_id, attempt, worker_id, host, pid, owner, started_at, ended_at, outcome, exit_code, signal, error, duration_ms, output_tail, log_path, job_version FROM attempts;
DROP TABLE attempts;
ALTER TABLE attempts_new RENAME TO attempts;
CREATE INDEX attempts_by_task ON attempts (task_id, id);
