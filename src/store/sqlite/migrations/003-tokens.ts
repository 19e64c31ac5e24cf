/** Migration 003-tokens: applied in order by open-database.ts (embedded in the build, so dist/ runs alone). */
export default /* sql */ `
-- Access tokens, written rql_<key id>_<secret>. Only a hash of each token is
-- kept (the token itself is shown once, when it is created); a call's token
-- is found by its public key id, then its hash compared in constant time.
CREATE TABLE tokens (
  id INTEGER PRIMARY KEY,
  key_id TEXT NOT NULL UNIQUE,
  hash BLOB NOT NULL,                -- SHA-256 of the whole token
  name TEXT NOT NULL,
  scopes TEXT NOT NULL,              -- space-separated: read:logs write:logs admin
  apps TEXT,                         -- JSON array of app ids; NULL = every app
  created INTEGER NOT NULL,          -- µs
  revoked INTEGER                    -- µs, NULL while valid
);
`;
