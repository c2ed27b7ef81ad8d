-- Heartbeats and recovery look up RUNNING tasks by owner; without this they scanned every
-- task (a million rows every few seconds). Only RUNNING rows are in it, so it stays tiny.
CREATE INDEX tasks_running ON tasks (lease_owner) WHERE status = 'RUNNING';
