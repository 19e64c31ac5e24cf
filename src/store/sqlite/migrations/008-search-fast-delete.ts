/**
 * Migration 008-search-fast-delete: the request search index goes back to
 * FTS5's ordinary deletes (007 had turned its secure-delete on). Its
 * documents hold no text (hex codes of trigrams and string entry keys,
 * without positions: search-doc.ts), so a deleted request's entries say
 * only that some request had some trigram, and they leave at the index's
 * next merge; while secure-delete rewrote every such trigram's doclist page
 * on each delete: a Delete of 3,000 of 30,000 requests took 57 s with it,
 * 1.7 s without, writes waiting meanwhile (docs/benchmarks.md). The
 * strings' index (the referrers' and user agents' real trigrams) keeps it.
 */
export default /* sql */ `
INSERT INTO request_search (request_search, rank) VALUES ('secure-delete', 0);
`;
