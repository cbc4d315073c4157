-- forum.bm25_apply (010) built each new chunk's forward-index row by reading its tsvector twice
-- (one subquery for the terms, one for their frequencies). One lateral aggregation now yields both
-- arrays from a single pass, in the same order; everything else is unchanged. (Issue 10: BM25
-- upkeep was ~1 s of a 10 MB record's write.)
CREATE OR REPLACE FUNCTION forum.bm25_apply(p_ids bigint[], p_lexemes tsvector[], p_lens integer[], p_sign integer)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  saved_work_mem text := current_setting('work_mem');
BEGIN
  IF coalesce(cardinality(p_ids), 0) = 0 THEN
    RETURN;
  END IF;
  -- Taking the statistics row lock first serialises writers; later statements see their commits.
  UPDATE forum.bm25_stats
     SET chunk_count = chunk_count + p_sign * cardinality(p_ids),
         token_total = token_total + p_sign * (SELECT coalesce(sum(l), 0) FROM unnest(p_lens) l);
  -- A 1,000-chunk batch has ~90k tokens: aggregate them in memory, not in temporary files.
  PERFORM set_config('work_mem', '64MB', true);

  IF p_sign > 0 THEN
    -- One pass over the new tokens feeds both the posting blocks and the vocabulary. The three
    -- arrays of a block come from one aggregation, so they stay aligned.
    WITH agg AS MATERIALIZED (
      SELECT u.term, min(c.id) AS first_chunk, max(c.id) AS last_chunk,
             array_agg(c.id) AS ids, array_agg(u.tf) AS tfs, array_agg(c.len) AS lens,
             count(*)::integer AS n, max(u.tf) AS max_tf, min(c.len) AS min_len
        FROM unnest(p_ids, p_lexemes, p_lens) AS c(id, vec, len), forum.bm25_tokens(c.vec) AS u
       GROUP BY u.term),
    postings AS (
      INSERT INTO forum.bm25_postings (term, first_chunk, last_chunk, chunk_ids, tfs, doc_lens)
      SELECT term, first_chunk, last_chunk, ids, tfs, lens FROM agg),
    up AS (
      INSERT INTO forum.bm25_terms AS t (term, df, max_tf, min_doc_len)
      SELECT term, n, max_tf, min_len FROM agg ORDER BY term
      ON CONFLICT (term) DO UPDATE
         SET df = t.df + EXCLUDED.df,
             max_tf = greatest(t.max_tf, EXCLUDED.max_tf),
             min_doc_len = least(t.min_doc_len, EXCLUDED.min_doc_len)
      RETURNING t.term, t.df)
    INSERT INTO forum.bm25_df_counts AS h (df, terms)
    SELECT m.df, sum(m.change)
      FROM (SELECT up.df - agg.n AS df, -1 AS change FROM up JOIN agg USING (term) WHERE up.df > agg.n
            UNION ALL
            SELECT up.df, 1 FROM up) AS m
     GROUP BY m.df
    ON CONFLICT (df) DO UPDATE SET terms = h.terms + EXCLUDED.terms;
    INSERT INTO forum.bm25_forward (chunk_id, doc_len, terms, tfs)
    SELECT c.id, c.len, coalesce(f.terms, '{}'), coalesce(f.tfs, '{}')
      FROM unnest(p_ids, p_lexemes, p_lens) AS c(id, vec, len),
           LATERAL (SELECT array_agg(u.term) AS terms, array_agg(u.tf) AS tfs FROM forum.bm25_tokens(c.vec) u) f;
  ELSE
    DELETE FROM forum.bm25_forward WHERE chunk_id = ANY (p_ids);
    -- Rewrite every block that holds a removed chunk without it (a block left empty is dropped).
    WITH removed AS MATERIALIZED (
      SELECT c.id, u.term
        FROM unnest(p_ids, p_lexemes) AS c(id, vec), forum.bm25_tokens(c.vec) AS u),
    old_blocks AS (
      DELETE FROM forum.bm25_postings b
       USING (SELECT DISTINCT b2.term, b2.first_chunk
                FROM removed r JOIN forum.bm25_postings b2
                  ON b2.term = r.term AND b2.first_chunk <= r.id AND b2.last_chunk >= r.id) AS hit
       WHERE b.term = hit.term AND b.first_chunk = hit.first_chunk
      RETURNING b.*)
    INSERT INTO forum.bm25_postings (term, first_chunk, last_chunk, chunk_ids, tfs, doc_lens)
    SELECT o.term, min(e.id), max(e.id), array_agg(e.id), array_agg(e.tf), array_agg(e.len)
      FROM old_blocks o, unnest(o.chunk_ids, o.tfs, o.doc_lens) AS e(id, tf, len)
     WHERE NOT EXISTS (SELECT 1 FROM removed r WHERE r.id = e.id AND r.term = o.term)
     GROUP BY o.term, o.first_chunk;

    WITH delta AS (
      SELECT u.term, count(*)::integer AS n
        FROM unnest(p_ids, p_lexemes) AS c(id, vec), forum.bm25_tokens(c.vec) AS u
       GROUP BY u.term),
    down AS (
      UPDATE forum.bm25_terms t SET df = t.df - d.n
        FROM delta d
       WHERE t.term = d.term AND t.df > d.n
      RETURNING t.term, t.df),
    gone AS (
      DELETE FROM forum.bm25_terms t USING delta d
       WHERE t.term = d.term AND t.df <= d.n
      RETURNING t.df)
    INSERT INTO forum.bm25_df_counts AS h (df, terms)
    SELECT m.df, sum(m.change)
      FROM (SELECT down.df + d.n AS df, -1 AS change FROM down JOIN delta d USING (term)
            UNION ALL
            SELECT down.df, 1 FROM down
            UNION ALL
            SELECT gone.df, -1 FROM gone) AS m
     GROUP BY m.df
    ON CONFLICT (df) DO UPDATE SET terms = h.terms + EXCLUDED.terms;
  END IF;
  DELETE FROM forum.bm25_df_counts WHERE terms = 0;
  PERFORM set_config('work_mem', saved_work_mem, true);
END $$;
