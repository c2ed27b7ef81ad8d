-- Ids never repeat in a store's life: an attempt's id is its fencing token, and a task or
-- batch id a frozen coordinator still holds must not come back on another batch's rows.
-- Without AUTOINCREMENT SQLite takes max(id) + 1, which falls back when `prune` deletes the
-- newest rows. `prune` raises these marks to the largest ids before it deletes; new ids are
-- taken above max(id) and the mark. A one-row table rather than AUTOINCREMENT: that would mean
-- rebuilding the tasks table (a million rows) on upgrade, and a sqlite_sequence write per
-- insert on the claim path.
CREATE TABLE id_high_water (
  one      INTEGER PRIMARY KEY CHECK (one = 1),
  batches  INTEGER NOT NULL,
  tasks    INTEGER NOT NULL,
  attempts INTEGER NOT NULL
) STRICT;
INSERT INTO id_high_water (one, batches, tasks, attempts) VALUES (1,
  coalesce((SELECT max(id) FROM batches), 0),
  coalesce((SELECT max(id) FROM tasks), 0),
  coalesce((SELECT max(id) FROM attempts), 0));
