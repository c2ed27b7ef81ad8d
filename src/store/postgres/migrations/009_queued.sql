-- An attempt claimed for a slot that already runs one waits queued behind it (SPEC §5): its task
-- is RUNNING (claimed, counted) but not running yet, and status, watch and the bar say `queued`.
-- Set by the claim (true for a slot's queued place, false for an idle slot), cleared when the
-- attempt starts; read only together with status = 'RUNNING', so what a settle or recovery
-- leaves on other rows never counts.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS queued BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX IF NOT EXISTS tasks_queued ON tasks (batch_id, stage) WHERE status = 'RUNNING' AND queued;
