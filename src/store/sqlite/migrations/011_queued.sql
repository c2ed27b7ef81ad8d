-- An attempt claimed for a slot that already runs one waits queued behind it (SPEC §5): its task
-- is RUNNING (claimed, counted) but not running yet, and status, watch and the bar say `queued`.
-- Set by the claim (1 for a slot's queued place, 0 for an idle slot), cleared when the attempt
-- starts; read only together with status = 'RUNNING', so what a settle or recovery leaves on
-- other rows never counts.
ALTER TABLE tasks ADD COLUMN queued INTEGER NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS tasks_queued ON tasks (batch_id, stage) WHERE status = 'RUNNING' AND queued = 1;
