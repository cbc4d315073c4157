-- Posting-block compaction (RET-1 speed).
--
-- Each ingest statement adds one posting block per term it contains, so after a bulk load a term
-- in 5 % of 100k chunks sits in ~100 blocks of ~50 postings, each on its own heap page: a query's
-- cost was mostly reading those pages (~550 page reads for six terms). forum.bm25_compact merges
-- every term's small blocks into blocks of up to 1,024 postings in chunk order, as an LSM tree
-- merges its runs; the ingest flow runs it after each load. Large blocks are never rewritten
-- again, so a merge rewrites at most the new postings plus one small tail per term. Postings,
-- statistics and scores are unchanged by it; only their layout changes.

-- The PL/pgSQL search's statements test postings against a list of chunk ids (`e.id IN (SELECT
-- unnest(ids))`). Its generic plans guess a few rows per array, and could make that list the outer
-- side of a nested loop over whole posting blocks: once per listed chunk, every block of a term
-- was decompressed again (4 s instead of 5 ms on a 100k-chunk query with 1,024-posting blocks).
-- Keeping each statement's joins in the order written (terms → blocks → postings, then the list)
-- rules that plan out: p50 13 ms on the 100k benchmark corpus, exact as before.
ALTER FUNCTION forum.bm25_search_maxscore(text, integer, text[], timestamptz, timestamptz,
                                          double precision, double precision, double precision)
  SET join_collapse_limit = 1;
ALTER FUNCTION forum.bm25_search_maxscore(text, integer, text[], timestamptz, timestamptz,
                                          double precision, double precision, double precision)
  SET from_collapse_limit = 1;

-- Blocks under half the target size: the ones a merge may rewrite, found without a full scan.
CREATE INDEX bm25_postings_small_blocks ON forum.bm25_postings (term) WHERE cardinality(chunk_ids) < 512;

CREATE FUNCTION forum.bm25_compact()
RETURNS TABLE (terms bigint, blocks_merged bigint, blocks_written bigint)
LANGUAGE plpgsql AS $$
DECLARE
  block_size constant integer := 1024;
BEGIN
  -- The statistics row lock orders this after (and before) concurrent writers, as in bm25_apply.
  PERFORM 1 FROM forum.bm25_stats FOR UPDATE;
  PERFORM set_config('work_mem', '256MB', true);
  RETURN QUERY
  WITH merging AS MATERIALIZED (
    SELECT s.term FROM forum.bm25_postings s
     WHERE cardinality(s.chunk_ids) < 512
     GROUP BY s.term HAVING count(*) > 1),
  old_blocks AS (
    DELETE FROM forum.bm25_postings b USING merging m
     WHERE b.term = m.term AND cardinality(b.chunk_ids) < 512
    RETURNING b.term, b.chunk_ids, b.tfs, b.doc_lens),
  postings AS (
    SELECT o.term, e.id, e.tf, e.len,
           (row_number() OVER (PARTITION BY o.term ORDER BY e.id) - 1) / block_size AS block
      FROM old_blocks o, unnest(o.chunk_ids, o.tfs, o.doc_lens) AS e(id, tf, len)),
  written AS (
    INSERT INTO forum.bm25_postings (term, first_chunk, last_chunk, chunk_ids, tfs, doc_lens)
    SELECT p.term, min(p.id), max(p.id), array_agg(p.id ORDER BY p.id), array_agg(p.tf ORDER BY p.id),
           array_agg(p.len ORDER BY p.id)
      FROM postings p GROUP BY p.term, p.block
    RETURNING 1)
  SELECT (SELECT count(*) FROM merging), (SELECT count(*) FROM old_blocks), (SELECT count(*) FROM written);
END $$;
