-- As SQLite's migration 015. --rate (SPEC §10): one gate per rate-limited batch, shared by every
-- run and worker on the store. `next_at`: when the next attempt may start; each start moves it
-- on by period / N.
CREATE TABLE IF NOT EXISTS rate_gates (
  batch_id BIGINT PRIMARY KEY REFERENCES batches (id) ON DELETE CASCADE,
  next_at  DOUBLE PRECISION NOT NULL
);
