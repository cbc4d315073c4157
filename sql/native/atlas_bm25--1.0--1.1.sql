-- atlas_bm25 1.0 -> 1.1: forum.bm25_native_top_k takes each term's bound and document frequency and
-- prunes (MaxScore); 1.0's signature goes (the library keeps its entry point for the databases of the
-- server not yet updated). A new database gets 1.1 as 1.0's script followed by this one.

-- terms with their weights (qtf * idf), bounds (weight * the term's largest saturated tf) and dfs
-- (postings), in decreasing order of bound (the order in which the kernel reads them and sums each
-- chunk's contributions); the top k by BM25 (k1, b, avgdl) over forum.bm25_postings; allowed: the
-- chunk ids a filter admits, or NULL for all. Best first, ties by lower chunk_id. Not STRICT:
-- allowed may be NULL (any other NULL argument is an error).

\echo Use "ALTER EXTENSION atlas_bm25 UPDATE TO '1.1'" to load this file. \quit

DROP FUNCTION @extschema@.bm25_native_top_k(text[], double precision[], integer, double precision,
                                            double precision, double precision, bigint[]);

CREATE FUNCTION @extschema@.bm25_native_top_k(
  terms text[], weights double precision[], bounds double precision[], dfs integer[], k integer,
  k1 double precision, b double precision, avgdl double precision, allowed bigint[])
RETURNS TABLE (chunk_id bigint, score double precision)
AS 'MODULE_PATHNAME', 'atlas_bm25_top_k_maxscore'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.bm25_native_top_k(text[], double precision[], double precision[], integer[], integer,
                                                  double precision, double precision, double precision, bigint[])
  IS 'atlas_bm25: exact BM25 top-k in C, MaxScore-pruned (forum.bm25_search calls it when installed)';
