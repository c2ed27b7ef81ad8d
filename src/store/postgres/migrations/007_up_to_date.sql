-- A task found up to date (its declared output newer than its input, SPEC §4) is recorded
-- SUCCESS without running; this says so, for status, tasks, show and the report. Set by the
-- settle of a SUCCESS (true up to date, false ran), read only together with status = 'SUCCESS'.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS up_to_date BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX IF NOT EXISTS tasks_up_to_date ON tasks (batch_id) WHERE status = 'SUCCESS' AND up_to_date;
