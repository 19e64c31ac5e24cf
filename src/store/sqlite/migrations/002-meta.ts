/** Migration 002-meta: applied in order by open-database.ts (embedded in the build, so dist/ runs alone). */
export default /* sql */ `
-- Settings that belong to the database: the key that authenticates read
-- offsets, and the last change sequence number given out.
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value BLOB NOT NULL
) WITHOUT ROWID;

INSERT INTO meta (key, value) VALUES ('offset_key', randomblob(32));
INSERT INTO meta (key, value) VALUES ('seq', 0);
-- Moves older than this sequence number have been pruned: offsets whose
-- snapshot is older are refused as expired.
INSERT INTO meta (key, value) VALUES ('moves_floor', 0);

-- The sequence number reached at points in time (one a retention run), so
-- that moves can be pruned by age.
CREATE TABLE seq_marks (
  time INTEGER PRIMARY KEY,          -- µs
  seq INTEGER NOT NULL
);
`;
