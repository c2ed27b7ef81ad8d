-- --rate (SPEC §10): one gate per rate-limited batch, shared by every run and worker on the
-- store. `next_at`: when the next attempt may start; each start moves it on by period / N.
CREATE TABLE rate_gates (
  batch_id INTEGER PRIMARY KEY REFERENCES batches (id) ON DELETE CASCADE,
  next_at  REAL    NOT NULL
) STRICT;
