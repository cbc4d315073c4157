-- atlas_bm25 1.0: forum.bm25_native_top_k, the kernel behind forum.bm25_search (sql/011, sql/013).
-- Same signature and semantics as the function store/native.py created before the extension existed.

\echo Use "CREATE EXTENSION atlas_bm25" to load this file. \quit

-- terms and weights (qtf * idf) in the caller's order, the top k by BM25 (k1, b, avgdl) over
-- forum.bm25_postings; allowed: the chunk ids a filter admits, or NULL for all. Best first,
-- ties by lower chunk_id. Not STRICT: allowed may be NULL (any other NULL argument is an error).
CREATE FUNCTION @extschema@.bm25_native_top_k(
  terms text[], weights double precision[], k integer, k1 double precision, b double precision,
  avgdl double precision, allowed bigint[])
RETURNS TABLE (chunk_id bigint, score double precision)
AS 'MODULE_PATHNAME', 'atlas_bm25_top_k'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION @extschema@.bm25_native_top_k(text[], double precision[], integer, double precision,
                                                  double precision, double precision, bigint[])
  IS 'atlas_bm25: exact BM25 top-k in C (forum.bm25_search calls it when installed)';
