-- Batches: one per source (or per --batch name). `job` is the effective job definition (JSON).
CREATE TABLE batches (
  id         INTEGER PRIMARY KEY,
  name       TEXT    NOT NULL UNIQUE,
  source     TEXT    NOT NULL,
  job        TEXT    NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  paused     INTEGER NOT NULL DEFAULT 0
) STRICT;

-- Tasks: one row per split item. `lease_token` is the id of the attempt holding the task
-- (the fencing token); a result is committed only while it still matches.
CREATE TABLE tasks (
  id               INTEGER PRIMARY KEY,
  batch_id         INTEGER NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
  task_key         TEXT    NOT NULL,
  stage            TEXT    NOT NULL DEFAULT '',
  seq              INTEGER NOT NULL,
  payload          TEXT    NOT NULL,
  status           TEXT    NOT NULL DEFAULT 'PENDING'
                   CHECK (status IN ('PENDING', 'RUNNING', 'SUCCESS', 'FAILED', 'CANCELLED')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  max_attempts     INTEGER NOT NULL,
  next_run_at      INTEGER NOT NULL DEFAULT 0,
  lease_owner      TEXT,
  lease_token      INTEGER,
  lease_expires_at INTEGER,
  worker_id        TEXT,
  created_at       INTEGER NOT NULL,
  started_at       INTEGER,
  finished_at      INTEGER,
  last_error       TEXT,
  result           TEXT,
  fingerprint      TEXT,
  UNIQUE (batch_id, stage, task_key)
) STRICT;

-- Serves the claim (batch, PENDING, due first, then id) and covers `status` counts,
-- including "retrying" (PENDING with attempts > 0), without touching the table.
CREATE INDEX tasks_by_state ON tasks (batch_id, status, next_run_at, attempts);

-- Attempts: the append-only audit log. Its id is the fencing token.
CREATE TABLE attempts (
  id          INTEGER PRIMARY KEY,
  task_id     INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  attempt     INTEGER NOT NULL,
  worker_id   TEXT    NOT NULL,
  host        TEXT    NOT NULL,
  pid         INTEGER,
  owner       TEXT    NOT NULL,
  started_at  INTEGER NOT NULL,
  ended_at    INTEGER,
  outcome     TEXT CHECK (outcome IN ('SUCCESS', 'FAILED', 'TIMEOUT', 'CRASHED', 'LOST', 'INTERRUPTED')),
  exit_code   INTEGER,
  signal      TEXT,
  error       TEXT,
  duration_ms INTEGER,
  output_tail TEXT,
  log_path    TEXT
) STRICT;

CREATE INDEX attempts_by_task ON attempts (task_id, id);
