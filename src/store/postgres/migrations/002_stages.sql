-- Stages (a per-item DAG), as SQLite's migration 005: `item_key` is the split item a stage
-- task belongs to (NULL without stages), `needs` the JSON array of the stages that must
-- succeed for the same item before it is claimable (NULL when none). `cancel_requested`:
-- `cancel` on a RUNNING task, which then ends CANCELLED unless it succeeds.
ALTER TABLE tasks ADD COLUMN item_key TEXT COLLATE "C";
ALTER TABLE tasks ADD COLUMN needs TEXT;
ALTER TABLE tasks ADD COLUMN cancel_requested BOOLEAN NOT NULL DEFAULT false;

CREATE INDEX tasks_by_item ON tasks (batch_id, item_key, stage) WHERE item_key IS NOT NULL;
-- Per-stage counts for `status` (index-only); only stage tasks are in it.
CREATE INDEX tasks_by_stage ON tasks (batch_id, stage, status, attempts) WHERE item_key IS NOT NULL;
