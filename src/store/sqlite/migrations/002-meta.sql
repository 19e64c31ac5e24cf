-- Settings that belong to the database: the key that authenticates read
-- offsets, and the last change sequence number given out.
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value BLOB NOT NULL
) WITHOUT ROWID;

INSERT INTO meta (key, value) VALUES ('offset_key', randomblob(32));
INSERT INTO meta (key, value) VALUES ('seq', 0);
