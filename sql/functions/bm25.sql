-- Exact Okapi BM25 (RET-1): index upkeep, the PL/pgSQL MaxScore search, and the search that hands off to the
-- C kernel (the atlas_bm25 extension provides forum.bm25_native_top_k; no function file defines it).

-- A tsvector as BM25 sees it: each lexeme with its term frequency (its number of positions).
CREATE OR REPLACE FUNCTION forum.bm25_tokens(v tsvector) RETURNS TABLE (term forum.bm25_term, tf integer)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT u.lexeme::forum.bm25_term, coalesce(array_length(u.positions, 1), 1) FROM unnest(v) AS u
$$;

-- Add (p_sign = 1) or remove (p_sign = -1) chunks' contributions to postings and statistics. A new chunk's
-- forward-index row takes its terms and frequencies from one pass over its tsvector.
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

-- One statement-level trigger per operation; each hands the chunks that enter or leave the
-- searchable corpus to forum.bm25_apply.
CREATE OR REPLACE FUNCTION forum.bm25_track_chunks() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ids bigint[]; vecs tsvector[]; lens integer[];
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    IF TG_OP = 'UPDATE' THEN
      SELECT array_agg(o.chunk_id), array_agg(o.lexemes), array_agg(o.token_count) INTO ids, vecs, lens
        FROM old_chunks o JOIN new_chunks n USING (chunk_id)
       WHERE o.searchable AND (NOT n.searchable OR n.lexemes IS DISTINCT FROM o.lexemes);
    ELSE
      SELECT array_agg(o.chunk_id), array_agg(o.lexemes), array_agg(o.token_count) INTO ids, vecs, lens
        FROM old_chunks o WHERE o.searchable;
    END IF;
    PERFORM forum.bm25_apply(ids, vecs, lens, -1);
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    IF TG_OP = 'UPDATE' THEN
      SELECT array_agg(n.chunk_id), array_agg(n.lexemes), array_agg(n.token_count) INTO ids, vecs, lens
        FROM old_chunks o JOIN new_chunks n USING (chunk_id)
       WHERE n.searchable AND (NOT o.searchable OR n.lexemes IS DISTINCT FROM o.lexemes);
    ELSE
      SELECT array_agg(n.chunk_id), array_agg(n.lexemes), array_agg(n.token_count) INTO ids, vecs, lens
        FROM new_chunks n WHERE n.searchable;
    END IF;
    PERFORM forum.bm25_apply(ids, vecs, lens, 1);
  END IF;
  RETURN NULL;
END $$;

-- Query tokens: the analyzer's lexemes with their repeat counts.
CREATE OR REPLACE FUNCTION forum.bm25_query_terms(p_query text)
RETURNS TABLE (term text, qtf integer) LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1)
    FROM unnest(forum.analyze('', p_query)) AS u
$$;

-- rank_bm25's idf per query term, with the epsilon floor (mean raw idf over the vocabulary).
CREATE OR REPLACE FUNCTION forum.bm25_idf(p_terms text[], p_epsilon double precision DEFAULT 0.25)
RETURNS TABLE (term text, df integer, idf double precision, max_tf integer, min_doc_len integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
  n double precision;
  floor_idf double precision;
BEGIN
  SELECT chunk_count INTO n FROM forum.bm25_stats;
  -- The vocabulary-wide mean is only needed when a query term is in more than half the chunks.
  IF EXISTS (SELECT 1 FROM forum.bm25_terms t WHERE t.term = ANY (p_terms COLLATE "C")
              AND ln(n - t.df + 0.5) - ln(t.df + 0.5) < 0) THEN
    SELECT p_epsilon * sum(h.terms * (ln(n - h.df + 0.5) - ln(h.df + 0.5))) / sum(h.terms)
      INTO floor_idf FROM forum.bm25_df_counts h;
  END IF;
  RETURN QUERY
  SELECT t.term::text, t.df,
         CASE WHEN ln(n - t.df + 0.5) - ln(t.df + 0.5) < 0 THEN floor_idf
              ELSE ln(n - t.df + 0.5) - ln(t.df + 0.5) END,
         t.max_tf, t.min_doc_len
    FROM forum.bm25_terms t WHERE t.term = ANY (p_terms COLLATE "C");
END $$;

-- Searchable chunks a sector / publication-window filter admits (NULL filter = no condition). A
-- recency window admits only documents with a known published_at in [after, before).
CREATE OR REPLACE FUNCTION forum.filtered_chunk_ids(p_sectors text[], p_after timestamptz, p_before timestamptz)
RETURNS bigint[] LANGUAGE sql STABLE AS $$
  SELECT coalesce(array_agg(c.chunk_id), '{}')
    FROM forum.documents d JOIN forum.chunks c USING (document_id)
   WHERE c.searchable
     AND (p_sectors IS NULL OR d.sector = ANY (p_sectors))
     AND (p_after IS NULL OR d.published_at >= p_after)
     AND (p_before IS NULL OR d.published_at < p_before)
$$;

-- The search: the C kernel when forum.bm25_engine() names one, else forum.bm25_search_maxscore; the same
-- signature, rows and order either way.
CREATE OR REPLACE FUNCTION forum.bm25_search(
  p_query text, p_k integer DEFAULT 20,
  p_sectors text[] DEFAULT NULL, p_after timestamptz DEFAULT NULL, p_before timestamptz DEFAULT NULL,
  p_k1 double precision DEFAULT 1.5, p_b double precision DEFAULT 0.75, p_epsilon double precision DEFAULT 0.25)
RETURNS TABLE (chunk_id bigint, score double precision, rank integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
  avgdl double precision;
  terms text[];
  weights double precision[];
  bounds double precision[];
  dfs integer[];
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
  IF avgdl IS NULL THEN
    RETURN;  -- empty corpus
  END IF;
  -- The kernel reads the terms, and sums each chunk's contributions, in this order (the PL/pgSQL
  -- search's): decreasing bound, so that it can stop before the common terms' long posting lists.
  SELECT w.terms, w.weights, w.bounds, w.dfs INTO terms, weights, bounds, dfs
    FROM forum.bm25_query_weights(p_query, avgdl, p_k1, p_b, p_epsilon) w;
  IF terms IS NULL THEN
    RETURN;  -- no query term occurs in the corpus
  END IF;
  IF p_sectors IS NOT NULL OR p_after IS NOT NULL OR p_before IS NOT NULL THEN
    allowed := forum.filtered_chunk_ids(p_sectors, p_after, p_before);
  END IF;
  RETURN QUERY
  SELECT n.chunk_id, n.score, n.ord::integer
    FROM forum.bm25_native_top_k(terms, weights, bounds, dfs, p_k, p_k1, p_b, avgdl, allowed)
         WITH ORDINALITY AS n(chunk_id, score, ord);
EXCEPTION WHEN undefined_file OR undefined_function THEN
  -- The kernel's library is missing (the server now runs from another installation, say), or the
  -- installed kernel is older than this search (atlas_bm25 1.0 took no bounds): the portable search
  -- answers until store/native.py installs the current kernel.
  RETURN QUERY SELECT * FROM forum.bm25_search_maxscore(p_query, p_k, p_sectors, p_after, p_before, p_k1, p_b, p_epsilon);
END $$;

-- Merges every term's small posting blocks (under 512 postings) into blocks of up to 1,024 in chunk order,
-- as an LSM tree merges its runs; the ingest flow runs it after each load. Scores are unchanged.
CREATE OR REPLACE FUNCTION forum.bm25_compact()
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

-- 'C kernel atlas_bm25_<version>' when the extension is installed (it provides
-- forum.bm25_native_top_k, which cannot be dropped while it belongs to it), 'C kernel <library>' for
-- a function created before the extension existed (`atlas db install-kernel` replaces it),
-- 'PL/pgSQL MaxScore' when there is no kernel. forum.bm25_search asks on every search: the extension
-- is looked up first (~10 us; the signature lookup alone costs twice that).
CREATE OR REPLACE FUNCTION forum.bm25_engine() RETURNS text LANGUAGE sql STABLE AS $$
  SELECT coalesce(
    (SELECT 'C kernel ' || e.extname || '_' || e.extversion FROM pg_extension e WHERE e.extname = 'atlas_bm25'),
    (SELECT 'C kernel ' || regexp_replace(p.probin, '^.*/', '')
       FROM pg_proc p
      WHERE p.oid = to_regprocedure('forum.bm25_native_top_k(text[], double precision[], integer, '
                                    'double precision, double precision, double precision, bigint[])')),
    'PL/pgSQL MaxScore')
$$;

-- tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avgdl))
-- Not STRICT (a strict SQL function is inlined only when the planner can prove its body strict);
-- a NULL argument gives NULL either way.
CREATE OR REPLACE FUNCTION forum.bm25_term_score(tf double precision, doc_len double precision, avgdl double precision,
                                      k1 double precision, b double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avgdl))
$$;

-- The query's terms that occur in the corpus, in the order both searches read them (decreasing bound, then
-- term): weight = qtf * idf; bound = weight * the term's largest possible saturated tf (its largest tf in
-- its shortest chunk), the most it can add to any chunk's score; df = its postings.
CREATE OR REPLACE FUNCTION forum.bm25_query_weights(
  p_query text, p_avgdl double precision, p_k1 double precision, p_b double precision, p_epsilon double precision)
RETURNS TABLE (terms text[], weights double precision[], bounds double precision[], dfs integer[])
LANGUAGE sql STABLE AS $$
  WITH q AS (SELECT * FROM forum.bm25_query_terms(p_query))
  SELECT array_agg(x.term ORDER BY x.bound DESC, x.term), array_agg(x.weight ORDER BY x.bound DESC, x.term),
         array_agg(x.bound ORDER BY x.bound DESC, x.term), array_agg(x.df ORDER BY x.bound DESC, x.term)
    FROM (SELECT i.term, i.df, q.qtf * i.idf AS weight,
                 q.qtf * i.idf * forum.bm25_term_score(i.max_tf, i.min_doc_len, p_avgdl, p_k1, p_b) AS bound
            FROM q JOIN forum.bm25_idf(ARRAY(SELECT q.term FROM q), p_epsilon) i USING (term)) x
$$;

-- Exact top-k with MaxScore pruning (Turtle & Flood, 1995): terms are read in decreasing order of their best
-- possible contribution; once the k-th best partial score exceeds the sum of the unread terms' bounds, the
-- chunks that can still reach the top k are completed from the forward index or the unread postings.
-- The SET clauses keep each statement's joins in the order written (terms, blocks, postings, then the
-- list of chunk ids): a generic plan could otherwise decompress a term's blocks once per listed chunk.
CREATE OR REPLACE FUNCTION forum.bm25_search_maxscore(
  p_query text, p_k integer DEFAULT 20,
  p_sectors text[] DEFAULT NULL, p_after timestamptz DEFAULT NULL, p_before timestamptz DEFAULT NULL,
  p_k1 double precision DEFAULT 1.5, p_b double precision DEFAULT 0.75, p_epsilon double precision DEFAULT 0.25)
RETURNS TABLE (chunk_id bigint, score double precision, rank integer)
LANGUAGE plpgsql STABLE
SET join_collapse_limit = 1
SET from_collapse_limit = 1
AS $$
DECLARE
  avgdl double precision;
  filtered boolean := p_sectors IS NOT NULL OR p_after IS NOT NULL OR p_before IS NOT NULL;
  allowed bigint[];
  q_terms text[]; q_weights double precision[]; q_bounds double precision[]; q_dfs integer[];
  first_pass_postings constant integer := 8000;
  n_terms integer;
  monotone boolean;
  j integer;
  rest_bound double precision;
  cand_ids bigint[] := '{}'; cand_scores double precision[] := '{}';
  surv_ids bigint[]; surv_scores double precision[];
  theta double precision;
BEGIN
  IF p_k IS NULL OR p_k < 1 THEN
    RAISE EXCEPTION 'bm25_search: k must be a positive integer, got %', p_k USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT s.token_total::double precision / nullif(s.chunk_count, 0) INTO avgdl FROM forum.bm25_stats s;
  IF avgdl IS NULL THEN
    RETURN;  -- empty corpus
  END IF;
  IF avgdl = 0 THEN
    avgdl := 1;  -- every chunk is empty: no term can match, avoid a division by zero
  END IF;

  SELECT w.terms, w.weights, w.bounds, w.dfs, (SELECT bool_and(x >= 0) FROM unnest(w.weights) x)
    INTO q_terms, q_weights, q_bounds, q_dfs, monotone
    FROM forum.bm25_query_weights(p_query, avgdl, p_k1, p_b, p_epsilon) w;
  n_terms := coalesce(cardinality(q_terms), 0);
  IF n_terms = 0 THEN
    RETURN;  -- no query term occurs in the corpus
  END IF;

  IF filtered THEN
    -- Filters are applied to postings as a hash lookup in the admitted chunk set, built once.
    allowed := forum.filtered_chunk_ids(p_sectors, p_after, p_before);
    IF cardinality(allowed) = 0 THEN
      RETURN;
    END IF;
  END IF;

  -- Read the first terms in one pass, as many as fit a posting budget (at least one): pruning
  -- rarely pays before that, and one statement costs less than one per term.
  j := 1;
  WHILE j < n_terms AND (SELECT sum(d) FROM unnest(q_dfs[1:j + 1]) d) <= first_pass_postings LOOP
    j := j + 1;
  END LOOP;
  SELECT array_agg(a.id), array_agg(a.s) INTO cand_ids, cand_scores
    FROM (SELECT e.id, sum(w.weight * forum.bm25_term_score(e.tf, e.len, avgdl, p_k1, p_b)) AS s
            FROM unnest(q_terms[1:j], q_weights[1:j]) AS w(term, weight)
            JOIN forum.bm25_postings b ON b.term = w.term COLLATE "C"
            CROSS JOIN LATERAL unnest(b.chunk_ids, b.tfs, b.doc_lens) AS e(id, tf, len)
           WHERE NOT filtered OR e.id IN (SELECT unnest(allowed))
           GROUP BY e.id) AS a;
  cand_ids := coalesce(cand_ids, '{}'); cand_scores := coalesce(cand_scores, '{}');

  LOOP
    EXIT WHEN j = n_terms;
    IF monotone AND cardinality(cand_ids) >= p_k THEN
      SELECT sum(x) INTO rest_bound FROM unnest(q_bounds[j + 1:]) x;
      SELECT s INTO theta FROM unnest(cand_scores) s ORDER BY s DESC OFFSET p_k - 1 LIMIT 1;
      -- The margin, far above rounding error, keeps the pruning exact in floating point.
      rest_bound := rest_bound * (1 + 1e-9) + 1e-12;
      IF rest_bound < theta THEN
        SELECT array_agg(p.id), array_agg(p.s) INTO surv_ids, surv_scores
          FROM unnest(cand_ids, cand_scores) AS p(id, s) WHERE p.s + rest_bound >= theta;
        -- Complete the survivors' scores the cheaper way (costs measured, in microseconds): a
        -- forward-index row per survivor (~40), or the unread terms' postings (~1.5 each).
        IF 40 * cardinality(surv_ids) <= 1.5 * (SELECT sum(d) FROM unnest(q_dfs[j + 1:]) d) THEN
          RETURN QUERY
          WITH exact AS (
            SELECT v.id, v.s + coalesce((
                     SELECT sum(w.weight * forum.bm25_term_score(f.tfs[w.pos], f.doc_len, avgdl, p_k1, p_b))
                       FROM (SELECT x.weight, array_position(f.terms, x.term COLLATE "C") AS pos
                               FROM unnest(q_terms[j + 1:], q_weights[j + 1:]) AS x(term, weight)) AS w
                      WHERE w.pos IS NOT NULL), 0) AS s
              FROM unnest(surv_ids, surv_scores) AS v(id, s) JOIN forum.bm25_forward f ON f.chunk_id = v.id)
          SELECT e.id, e.s, (row_number() OVER (ORDER BY e.s DESC, e.id))::integer
            FROM exact e ORDER BY e.s DESC, e.id LIMIT p_k;
        ELSE
          RETURN QUERY
          WITH rest AS (
            SELECT e.id, sum(w.weight * forum.bm25_term_score(e.tf, e.len, avgdl, p_k1, p_b)) AS s
              FROM unnest(q_terms[j + 1:], q_weights[j + 1:]) AS w(term, weight)
              JOIN forum.bm25_postings b ON b.term = w.term COLLATE "C"
              CROSS JOIN LATERAL unnest(b.chunk_ids, b.tfs, b.doc_lens) AS e(id, tf, len)
             WHERE e.id IN (SELECT unnest(surv_ids))
             GROUP BY e.id)
          SELECT v.id, v.s + coalesce(r.s, 0), (row_number() OVER (ORDER BY v.s + coalesce(r.s, 0) DESC, v.id))::integer
            FROM unnest(surv_ids, surv_scores) AS v(id, s) LEFT JOIN rest r USING (id)
           ORDER BY 2 DESC, 1 LIMIT p_k;
        END IF;
        RETURN;
      END IF;
    END IF;
    j := j + 1;
    -- Add term j's postings to the partial scores.
    SELECT array_agg(a.id), array_agg(a.s) INTO cand_ids, cand_scores
      FROM (SELECT u.id, sum(u.s) AS s
              FROM (SELECT * FROM unnest(cand_ids, cand_scores) AS p(id, s)
                    UNION ALL
                    SELECT e.id, q_weights[j] * forum.bm25_term_score(e.tf, e.len, avgdl, p_k1, p_b)
                      FROM forum.bm25_postings b, unnest(b.chunk_ids, b.tfs, b.doc_lens) AS e(id, tf, len)
                     WHERE b.term = q_terms[j] COLLATE "C"
                       AND (NOT filtered OR e.id IN (SELECT unnest(allowed)))) AS u
             GROUP BY u.id) AS a;
    cand_ids := coalesce(cand_ids, '{}'); cand_scores := coalesce(cand_scores, '{}');
  END LOOP;

  -- Every term was read: partial scores are exact.
  RETURN QUERY
  SELECT p.id, p.s, (row_number() OVER (ORDER BY p.s DESC, p.id))::integer
    FROM unnest(cand_ids, cand_scores) AS p(id, s)
   ORDER BY p.s DESC, p.id
   LIMIT p_k;
END $$;
