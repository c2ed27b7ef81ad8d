-- A batch's latest finish, kept per database session instead of on the batch row: every
-- settle used to update batches.last_finished_at, one hot row that serialised all the
-- coordinators of a batch. Each session now raises its own row (`lane`, its backend pid
-- folded to 64 lanes), and readers take the greatest of the lanes and the batch row.
CREATE TABLE IF NOT EXISTS batch_finishes (
  batch_id BIGINT NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
  lane INTEGER NOT NULL,
  last_finished_at BIGINT NOT NULL,
  PRIMARY KEY (batch_id, lane)
);
