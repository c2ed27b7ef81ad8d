-- As SQLite's migration 014. "Busy, try later" (SPEC §10): an attempt whose command exits with
-- a --busy-codes code, or whose handler throws RetryLater, is recorded BUSY and puts its task
-- back without spending an attempt. `busy_since`: since when the task's attempts have answered
-- busy in a row (any other outcome clears it), so --max-busy can end the streak as a failure.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS busy_since BIGINT;
ALTER TABLE attempts DROP CONSTRAINT IF EXISTS attempts_outcome_check;
-- NOT VALID, then validated: the scan of every attempt takes a lock that lets writers on.
ALTER TABLE attempts ADD CONSTRAINT attempts_outcome_check
  CHECK (outcome IN ('SUCCESS', 'FAILED', 'TIMEOUT', 'CRASHED', 'LOST', 'INTERRUPTED', 'BUSY')) NOT VALID;
ALTER TABLE attempts VALIDATE CONSTRAINT attempts_outcome_check;
