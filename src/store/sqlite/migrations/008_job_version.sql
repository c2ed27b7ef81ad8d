-- A batch's job definition has a version, bumped by every `updateJob` (another `run` with a
-- different --exec, retries, …), and each attempt records the version it was claimed under:
-- a coordinator claims only while the batch's version is the one whose handler its workers
-- loaded, so an attempt never runs a handler older than the stored one, and `show` can say
-- which definition each attempt ran. Attempts made before this version have none (NULL).
ALTER TABLE batches ADD COLUMN job_version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE attempts ADD COLUMN job_version INTEGER;
