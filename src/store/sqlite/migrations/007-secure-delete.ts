/**
 * Migration 007-secure-delete: the two full-text indexes (search-doc.ts,
 * strings.ts) take a deleted document's tokens out of their segments at
 * once, instead of recording the delete beside them until a merge: what
 * Delete and retention remove leaves the file (docs/privacy.md). The
 * setting is kept in each index's own config table.
 */
export default /* sql */ `
INSERT INTO request_search (request_search, rank) VALUES ('secure-delete', 1);
INSERT INTO strings_search (strings_search, rank) VALUES ('secure-delete', 1);
`;
