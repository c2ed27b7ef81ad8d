-- When a batch first had an attempt claimed and last had one finish: kept on the batch so
-- `status` computes rates without scanning a million tasks.
ALTER TABLE batches ADD COLUMN first_started_at INTEGER;
ALTER TABLE batches ADD COLUMN last_finished_at INTEGER;
UPDATE batches SET
  first_started_at = (SELECT min(started_at) FROM tasks WHERE tasks.batch_id = batches.id),
  last_finished_at = (SELECT max(finished_at) FROM tasks WHERE tasks.batch_id = batches.id);
