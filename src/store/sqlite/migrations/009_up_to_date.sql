-- A task found up to date (its declared output newer than its input, SPEC §4) is recorded
-- SUCCESS without running; this says so, for status, tasks, show and the report. Set by the
-- settle of a SUCCESS (1 up to date, 0 ran), read only together with status = 'SUCCESS'.
ALTER TABLE tasks ADD COLUMN up_to_date INTEGER NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS tasks_up_to_date ON tasks (batch_id) WHERE status = 'SUCCESS' AND up_to_date = 1;
