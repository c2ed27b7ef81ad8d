-- --rate-key (SPEC §10): the rate applies per rendered key. `rate_key`: the task's key as the
-- enqueue rendered it (NULL: none given; a keyed claim counts it as the key ''). One gate per
-- batch and key, shared by every run and worker on the store: `next_at` is when the next
-- attempt of that key may start.
ALTER TABLE tasks ADD COLUMN rate_key TEXT;
CREATE TABLE rate_key_gates (
  batch_id INTEGER NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
  rate_key TEXT    NOT NULL,
  next_at  REAL    NOT NULL,
  PRIMARY KEY (batch_id, rate_key)
) STRICT;
