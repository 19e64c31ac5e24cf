-- Settings that belong to the database, e.g. the key that authenticates read offsets.
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value BLOB NOT NULL
) WITHOUT ROWID;

INSERT INTO meta (key, value) VALUES ('offset_key', randomblob(32));
