-- Attempt numbers count every attempt a task ever had (SPEC §6); `attempts` is the retry
-- budget used so far, which retry-failed and --rerun-changed reset to 0. This keeps the
-- attempts of the earlier budgets, so the next attempt's number is attempts + earlier_attempts.
ALTER TABLE tasks ADD COLUMN earlier_attempts INTEGER NOT NULL DEFAULT 0;
