-- As SQLite's migration 017. --rate-key (SPEC §10): the rate applies per rendered key.
-- `rate_key`: the task's key as the enqueue rendered it (NULL: none given; a keyed claim counts
-- it as the key ''). One gate per batch and key, shared by every run and worker on the store.
ALTER TABLE tasks ADD COLUMN IF NOT EXISTS rate_key TEXT COLLATE "C";
CREATE TABLE IF NOT EXISTS rate_key_gates (
  batch_id BIGINT NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
  rate_key TEXT COLLATE "C" NOT NULL,
  next_at  DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (batch_id, rate_key)
);
