-- A declared output is put in place only after its attempt's success is committed (a fenced-off
-- attempt must never rename over the committed one's file): the settle of a SUCCESS records
-- the attempt's temporary file here, the rename follows, and the coordinator clears it once
-- the file is in place. Non-NULL after a crash between the two: recovery redoes the rename.
-- A stage that needs this task waits while it is set (its input is not in place yet).
ALTER TABLE tasks ADD COLUMN output_temp TEXT;
CREATE INDEX IF NOT EXISTS tasks_output_pending ON tasks (batch_id) WHERE output_temp IS NOT NULL;
