-- The store's identity: a random id written once, when the store is created (or upgraded to
-- this version), that names its log folder. Two stores side by side, or a store moved aside
-- and created again, then never share log files, whatever their batch names.
CREATE TABLE store_identity (
  one INTEGER PRIMARY KEY CHECK (one = 1),
  id  TEXT    NOT NULL CHECK (length(id) = 32)
);
INSERT INTO store_identity (one, id) VALUES (1, lower(hex(randomblob(16))));
