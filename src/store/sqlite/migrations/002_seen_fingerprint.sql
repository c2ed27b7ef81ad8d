-- The fingerprint (size:mtime) the source showed at the latest run, beside `fingerprint`,
-- the one the task last ran on: a SUCCESS task whose two differ has changed since.
ALTER TABLE tasks ADD COLUMN seen_fingerprint TEXT;
UPDATE tasks SET seen_fingerprint = fingerprint;

-- Keeps "changed since it succeeded" cheap to count on a million-task batch: only the
-- (normally few) changed rows are in it.
CREATE INDEX tasks_changed ON tasks (batch_id) WHERE status = 'SUCCESS' AND seen_fingerprint IS NOT fingerprint;
