-- A batch's counts kept as its tasks change, so `status` reads a few rows, not an index entry
-- per task (BENCH.md: status ≤ 100 ms at ten million tasks). One row per batch, stage and
-- bucket, the disjoint groups `Counts` reports: PENDING and RETRYING (PENDING, attempted),
-- RUNNING and QUEUED (RUNNING, waiting behind its slot), SUCCESS, FAILED, CANCELLED.
--
-- Updates and deletes are counted by triggers. Inserts are not: an enqueue of millions of rows
-- would pay a row of trigger work per task (40% of its insert), so the enqueue, the one
-- statement that inserts tasks, adds what it inserted in one statement of its own
-- (sqlite-enqueue.ts). A task's batch and stage never change.
CREATE TABLE task_counts (
  batch_id INTEGER NOT NULL,
  stage    TEXT    NOT NULL,
  bucket   TEXT    NOT NULL,
  n        INTEGER NOT NULL,
  PRIMARY KEY (batch_id, stage, bucket)
) STRICT, WITHOUT ROWID;

INSERT INTO task_counts (batch_id, stage, bucket, n)
SELECT batch_id, stage,
  CASE status WHEN 'PENDING' THEN iif(attempts > 0, 'RETRYING', 'PENDING') WHEN 'RUNNING' THEN iif(queued, 'QUEUED', 'RUNNING') ELSE status END,
  count(*)
FROM tasks GROUP BY 1, 2, 3;

CREATE TRIGGER task_counts_update AFTER UPDATE OF status, attempts, queued ON tasks
WHEN (CASE OLD.status WHEN 'PENDING' THEN iif(OLD.attempts > 0, 'RETRYING', 'PENDING') WHEN 'RUNNING' THEN iif(OLD.queued, 'QUEUED', 'RUNNING') ELSE OLD.status END)
  IS NOT (CASE NEW.status WHEN 'PENDING' THEN iif(NEW.attempts > 0, 'RETRYING', 'PENDING') WHEN 'RUNNING' THEN iif(NEW.queued, 'QUEUED', 'RUNNING') ELSE NEW.status END)
BEGIN
  UPDATE task_counts SET n = n - 1
  WHERE batch_id = OLD.batch_id AND stage = OLD.stage
    AND bucket = CASE OLD.status WHEN 'PENDING' THEN iif(OLD.attempts > 0, 'RETRYING', 'PENDING') WHEN 'RUNNING' THEN iif(OLD.queued, 'QUEUED', 'RUNNING') ELSE OLD.status END;
  INSERT INTO task_counts (batch_id, stage, bucket, n)
  VALUES (NEW.batch_id, NEW.stage,
    CASE NEW.status WHEN 'PENDING' THEN iif(NEW.attempts > 0, 'RETRYING', 'PENDING') WHEN 'RUNNING' THEN iif(NEW.queued, 'QUEUED', 'RUNNING') ELSE NEW.status END, 1)
  ON CONFLICT (batch_id, stage, bucket) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER task_counts_delete AFTER DELETE ON tasks
BEGIN
  UPDATE task_counts SET n = n - 1
  WHERE batch_id = OLD.batch_id AND stage = OLD.stage
    AND bucket = CASE OLD.status WHEN 'PENDING' THEN iif(OLD.attempts > 0, 'RETRYING', 'PENDING') WHEN 'RUNNING' THEN iif(OLD.queued, 'QUEUED', 'RUNNING') ELSE OLD.status END;
END;

CREATE TRIGGER task_counts_batch_gone AFTER DELETE ON batches
BEGIN
  DELETE FROM task_counts WHERE batch_id = OLD.id;
END;
