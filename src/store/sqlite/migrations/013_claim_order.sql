-- The order new tasks are claimed in (SPEC §10, --order and --priority): `priority` (higher
-- first, 0 unless a --priority glob matched the key), then `order_rank` (lower first: 0 for
-- key order, minus the size for size order, a learned duration or the size for history, a
-- hash for random), then the key order (id). Both are written by every enqueue, so a rerun
-- with another order re-ranks what waits. The claim reads tasks_by_state in that order, so
-- the index gains both columns (before `attempts`, which the counts still read from it).
ALTER TABLE tasks ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN order_rank INTEGER NOT NULL DEFAULT 0;
DROP INDEX tasks_by_state;
CREATE INDEX tasks_by_state ON tasks (batch_id, status, next_run_at, priority DESC, order_rank, attempts);
