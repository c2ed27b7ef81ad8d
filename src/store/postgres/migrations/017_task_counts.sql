-- As SQLite's migration 019: a batch's counts kept as its tasks change, so `status` reads a few
-- rows, not an index entry per task. One row per batch, stage, bucket (the disjoint groups
-- `Counts` reports: PENDING, RETRYING, RUNNING, QUEUED, SUCCESS, FAILED, CANCELLED) and shard:
-- each server process adds to rows of its own (`shard` = its pg_backend_pid(), unique among
-- live sessions), so two transactions never wait for each other on a count, and `counts` sums
-- the shards. Statement-level triggers see every row a statement inserted, updated or deleted
-- (the effects of its data-modifying WITH parts, and of cascades, included), once each.
CREATE TABLE IF NOT EXISTS task_counts (
  batch_id BIGINT  NOT NULL,
  stage    TEXT    COLLATE "C" NOT NULL,
  bucket   TEXT    NOT NULL,
  shard    INTEGER NOT NULL,
  n        BIGINT  NOT NULL,
  PRIMARY KEY (batch_id, stage, bucket, shard)
);

CREATE OR REPLACE FUNCTION task_bucket(status TEXT, attempts INTEGER, queued BOOLEAN) RETURNS TEXT
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE status WHEN 'PENDING' THEN CASE WHEN attempts > 0 THEN 'RETRYING' ELSE 'PENDING' END
    WHEN 'RUNNING' THEN CASE WHEN queued THEN 'QUEUED' ELSE 'RUNNING' END ELSE status END
$$;

INSERT INTO task_counts (batch_id, stage, bucket, shard, n)
SELECT batch_id, stage, task_bucket(status, attempts, queued), 0, count(*) FROM tasks GROUP BY 1, 2, 3
ON CONFLICT (batch_id, stage, bucket, shard) DO NOTHING;

-- The rows a statement moved, as (batch, stage, bucket, +1 or -1), added to this session's shard
-- in key order; a bucket a statement left as it was (a lease renewed, a payload changed) adds
-- nothing. A batch's rows go with it (prune deletes its tasks first, then the batch).
CREATE OR REPLACE FUNCTION count_tasks() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO task_counts AS c (batch_id, stage, bucket, shard, n)
    SELECT batch_id, stage, task_bucket(status, attempts, queued), pg_backend_pid(), count(*)
    FROM new_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (batch_id, stage, bucket, shard) DO UPDATE SET n = c.n + excluded.n;
  ELSE
    INSERT INTO task_counts AS c (batch_id, stage, bucket, shard, n)
    SELECT batch_id, stage, bucket, pg_backend_pid(), sum(d) FROM (
      SELECT batch_id, stage, task_bucket(status, attempts, queued) AS bucket, -1 AS d FROM old_rows
      UNION ALL
      SELECT batch_id, stage, task_bucket(status, attempts, queued), 1 FROM new_rows
    ) AS moved
    GROUP BY 1, 2, 3 HAVING sum(d) <> 0 ORDER BY 1, 2, 3
    ON CONFLICT (batch_id, stage, bucket, shard) DO UPDATE SET n = c.n + excluded.n;
  END IF;
  RETURN NULL;
END
$$;

-- DELETE has no NEW TABLE. A task deleted with its batch (a cascade) is not counted: the
-- batch's rows are gone, and its trigger may have run first.
CREATE OR REPLACE FUNCTION count_deleted_tasks() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO task_counts AS c (batch_id, stage, bucket, shard, n)
  SELECT batch_id, stage, task_bucket(status, attempts, queued), pg_backend_pid(), -count(*)
  FROM old_rows WHERE batch_id IN (SELECT id FROM batches) GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (batch_id, stage, bucket, shard) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION drop_batch_counts() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  DELETE FROM task_counts WHERE batch_id IN (SELECT id FROM old_batches);
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS task_counts_insert ON tasks;
CREATE TRIGGER task_counts_insert AFTER INSERT ON tasks
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_tasks();
DROP TRIGGER IF EXISTS task_counts_update ON tasks;
CREATE TRIGGER task_counts_update AFTER UPDATE ON tasks
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_tasks();
DROP TRIGGER IF EXISTS task_counts_delete ON tasks;
CREATE TRIGGER task_counts_delete AFTER DELETE ON tasks
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION count_deleted_tasks();
DROP TRIGGER IF EXISTS task_counts_batch_gone ON batches;
CREATE TRIGGER task_counts_batch_gone AFTER DELETE ON batches
  REFERENCING OLD TABLE AS old_batches FOR EACH STATEMENT EXECUTE FUNCTION drop_batch_counts();
