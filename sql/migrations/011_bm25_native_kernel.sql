-- BM25 served by a native kernel when the server can load one (RET-1).
--
-- forum.bm25_native_top_k (sql/native/bm25_top_k.c) scores every posting of the query terms in C:
-- ~3 ms for the ~30k postings of a six-term query over 100k chunks, where the PL/pgSQL search of
-- 010 spends ~1.5 us per posting in the executor. store/native.py compiles it against the running
-- server's own headers and installs it into the server's library directory (it needs a C compiler,
-- the server headers and superuser rights, so it cannot be a migration); where it cannot, the
-- PL/pgSQL MaxScore search answers. Both are exact and return the same rows (tests/store/test_bm25.py
-- runs the rank_bm25 oracle against each).

ALTER FUNCTION forum.bm25_search(text, integer, text[], timestamptz, timestamptz,
                                 double precision, double precision, double precision)
  RENAME TO bm25_search_maxscore;

-- Which engine serves forum.bm25_search in this database, for traces and `atlas db status`.
CREATE FUNCTION forum.bm25_engine() RETURNS text LANGUAGE sql STABLE AS $$
  SELECT coalesce(
    (SELECT 'C kernel ' || regexp_replace(p.probin, '^.*/', '')
       FROM pg_proc p
      WHERE p.oid = to_regprocedure('forum.bm25_native_top_k(text[], double precision[], integer, '
                                    'double precision, double precision, double precision, bigint[])')),
    'PL/pgSQL MaxScore')
$$;

-- Same signature, rows and order as forum.bm25_search_maxscore.
CREATE FUNCTION forum.bm25_search(
  p_query text, p_k integer DEFAULT 20,
  p_sectors text[] DEFAULT NULL, p_after timestamptz DEFAULT NULL, p_before timestamptz DEFAULT NULL,
  p_k1 double precision DEFAULT 1.5, p_b double precision DEFAULT 0.75, p_epsilon double precision DEFAULT 0.25)
RETURNS TABLE (chunk_id bigint, score double precision, rank integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
  avgdl double precision;
  terms text[];
  weights double precision[];
  allowed bigint[];
BEGIN
  IF forum.bm25_engine() = 'PL/pgSQL MaxScore' THEN
    RETURN QUERY SELECT * FROM forum.bm25_search_maxscore(p_query, p_k, p_sectors, p_after, p_before, p_k1, p_b, p_epsilon);
    RETURN;
  END IF;
  IF p_k IS NULL OR p_k < 1 THEN
    RAISE EXCEPTION 'bm25_search: k must be a positive integer, got %', p_k USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- avgdl as 010 computes it: NULL for an empty corpus (nothing to search), 1 if every chunk is empty.
  SELECT CASE WHEN s.token_total = 0 THEN 1 ELSE s.token_total::double precision / s.chunk_count END
    INTO avgdl FROM forum.bm25_stats s WHERE s.chunk_count > 0;
  -- Each query term's weight: its repeat count times rank_bm25's idf.
  SELECT array_agg(q.term ORDER BY q.term), array_agg(q.qtf * i.idf ORDER BY q.term) INTO terms, weights
    FROM forum.bm25_query_terms(p_query) q
    JOIN forum.bm25_idf(ARRAY(SELECT t.term FROM forum.bm25_query_terms(p_query) t), p_epsilon) i USING (term);
  IF avgdl IS NULL OR terms IS NULL THEN
    RETURN;  -- empty corpus, or no query term occurs in it
  END IF;
  IF p_sectors IS NOT NULL OR p_after IS NOT NULL OR p_before IS NOT NULL THEN
    allowed := forum.filtered_chunk_ids(p_sectors, p_after, p_before);
  END IF;
  RETURN QUERY
  SELECT n.chunk_id, n.score, n.ord::integer
    FROM forum.bm25_native_top_k(terms, weights, p_k, p_k1, p_b, avgdl, allowed)
         WITH ORDINALITY AS n(chunk_id, score, ord);
EXCEPTION WHEN undefined_file THEN
  -- The kernel's library is missing (the server now runs from another installation, say): the
  -- portable search answers until store/native.py installs the kernel again.
  RETURN QUERY SELECT * FROM forum.bm25_search_maxscore(p_query, p_k, p_sectors, p_after, p_before, p_k1, p_b, p_epsilon);
END $$;
