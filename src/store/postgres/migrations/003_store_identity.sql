-- The store's identity, as SQLite's migration 006: a random id written once, when the schema
-- is created (or upgraded to this version), that names its log folder, so two schemas (or a
-- schema dropped and created again) never share log files, whatever their batch names.
CREATE TABLE store_identity (
  one INTEGER PRIMARY KEY CHECK (one = 1),
  id  TEXT    NOT NULL CHECK (length(id) = 32)
);
INSERT INTO store_identity (one, id) VALUES (1, replace(gen_random_uuid()::text, '-', ''));
