-- As SQLite's migration 019: a batch's counts kept as its tasks change, so `status` reads a few
-- rows, not an index entry per task. One row per batch, stage, bucket (the disjoint groups
-- `Counts` reports: PENDING, RETRYING, RUNNING, QUEUED, SUCCESS, FAILED, CANCELLED) and shard:
-- each server process adds to rows of its own (`shard` = its pg_backend_pid(), unique among
-- live sessions), so two transactions never wait for each other on a count, and `counts` sums
-- the shards (an enqueue folds the shards of ended sessions into shard 0). Statement-level
-- triggers see every row a statement inserted, updated or deleted (the effects of its
-- data-modifying WITH parts, and of cascades, included), once each. Not counted: TRUNCATE,
-- and changes made with the triggers off (session_replication_role = replica).

-- First the locks every step below would take anyway, in the order writers take them (batches,
-- then tasks): no write of an older version can commit between the count of the tasks as they
-- are and the triggers that count every change after it, and none can deadlock with it.
LOCK TABLE batches, tasks IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE IF NOT EXISTS task_counts (
  batch_id BIGINT  NOT NULL,
  stage    TEXT    COLLATE "C" NOT NULL,
  bucket   TEXT    NOT NULL,
  shard    INTEGER NOT NULL,
  n        BIGINT  NOT NULL,
  PRIMARY KEY (batch_id, stage, bucket, shard)
);

INSERT INTO task_counts (batch_id, stage, bucket, shard, n)
SELECT batch_id, stage,
  CASE status WHEN 'PENDING' THEN CASE WHEN attempts > 0 THEN 'RETRYING' ELSE 'PENDING' END
    WHEN 'RUNNING' THEN CASE WHEN queued THEN 'QUEUED' ELSE 'RUNNING' END ELSE status END,
  0, count(*)
FROM tasks GROUP BY 1, 2, 3
ON CONFLICT (batch_id, stage, bucket, shard) DO NOTHING;

-- The rows a statement moved, as (batch, stage, bucket, +1 or -1), added to this session's shard
-- in key order. A statement that moved no task between buckets (a lease renewed, a result
-- stored) stops at the first check and writes nothing. The table is named through the schema
-- of the table that fired (TG_TABLE_SCHEMA), never through search_path: a renamed store keeps
-- counting into its own table, and no temporary table can stand in for it. A task deleted with
-- its batch (a cascade) is not counted: the batch's rows go with it.
CREATE OR REPLACE FUNCTION count_tasks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Nested: an INSERT's or DELETE's trigger has no old_rows or new_rows to plan this with.
  IF TG_OP = 'UPDATE' THEN
    IF NOT EXISTS (
      SELECT 1 FROM old_rows AS o JOIN new_rows AS n ON n.id = o.id
      WHERE o.status IS DISTINCT FROM n.status
        OR (n.status = 'PENDING' AND (o.attempts > 0) IS DISTINCT FROM (n.attempts > 0))
        OR (n.status = 'RUNNING' AND o.queued IS DISTINCT FROM n.queued)
    ) THEN
      RETURN NULL;
    END IF;
  END IF;
  EXECUTE format($sql$
    INSERT INTO %I.task_counts AS c (batch_id, stage, bucket, shard, n)
    SELECT batch_id, stage, bucket, pg_backend_pid(), sum(d) FROM (
      SELECT batch_id, stage, status, attempts, queued, %s AS d FROM %s
      %s
    ) AS moved(batch_id, stage, status, attempts, queued, d)
    CROSS JOIN LATERAL (SELECT CASE status WHEN 'PENDING' THEN CASE WHEN attempts > 0 THEN 'RETRYING' ELSE 'PENDING' END
      WHEN 'RUNNING' THEN CASE WHEN queued THEN 'QUEUED' ELSE 'RUNNING' END ELSE status END AS bucket) AS b
    WHERE %s
    GROUP BY 1, 2, 3 HAVING sum(d) <> 0 ORDER BY 1, 2, 3
    ON CONFLICT (batch_id, stage, bucket, shard) DO UPDATE SET n = c.n + excluded.n$sql$,
    TG_TABLE_SCHEMA,
    CASE TG_OP WHEN 'DELETE' THEN '-1' ELSE '1' END,
    CASE TG_OP WHEN 'DELETE' THEN 'old_rows' ELSE 'new_rows' END,
    CASE TG_OP WHEN 'UPDATE' THEN 'UNION ALL SELECT batch_id, stage, status, attempts, queued, -1 FROM old_rows' ELSE '' END,
    CASE TG_OP WHEN 'DELETE' THEN format('batch_id IN (SELECT id FROM %I.batches)', TG_TABLE_SCHEMA) ELSE 'true' END);
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION drop_batch_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DELETE FROM %I.task_counts WHERE batch_id IN (SELECT id FROM old_batches)', TG_TABLE_SCHEMA);
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
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION count_tasks();
DROP TRIGGER IF EXISTS task_counts_batch_gone ON batches;
CREATE TRIGGER task_counts_batch_gone AFTER DELETE ON batches
  REFERENCING OLD TABLE AS old_batches FOR EACH STATEMENT EXECUTE FUNCTION drop_batch_counts();
