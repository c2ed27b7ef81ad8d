-- Stages (a per-item DAG): every split item gets one task per stage. `item_key` is the item
-- a stage task belongs to (NULL without stages), `needs` the JSON array of the stages that
-- must succeed for the same item before it is claimable (NULL when none).
ALTER TABLE tasks ADD COLUMN item_key TEXT;
ALTER TABLE tasks ADD COLUMN needs TEXT;
-- `cancel` on a RUNNING task: it finishes, and unless it succeeds it ends CANCELLED, not retried.
ALTER TABLE tasks ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;

-- An item's siblings: the claim's needs check, cancelling dependents, inputs.
CREATE INDEX tasks_by_item ON tasks (batch_id, item_key, stage) WHERE item_key IS NOT NULL;
-- Per-stage counts for `status` without reading the table; only stage tasks are in it.
CREATE INDEX tasks_by_stage ON tasks (batch_id, stage, status, attempts) WHERE item_key IS NOT NULL;
