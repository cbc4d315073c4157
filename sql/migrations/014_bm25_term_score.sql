-- The Okapi BM25 contribution of one posting, written once (RET-1).
--
-- forum.bm25_search_maxscore (010, renamed in 011, planner settings from 012) spelled the saturated
-- term frequency out in each of its statements. It now calls forum.bm25_term_score, a LANGUAGE sql
-- function whose body is a single expression: the planner inlines it into every statement, so it
-- costs no function call per posting, and the arithmetic (operands and their order) is the one
-- written before, so scores stay bit-identical (and equal rank_bm25's).
--
-- The weight (qtf * idf) multiplies the result outside the function, as before. The native kernel
-- (sql/native/bm25_top_k.c) keeps its own C copy of the formula; tests/store/test_bm25.py checks
-- both against rank_bm25.

-- tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avgdl))
-- Not STRICT (a strict SQL function is inlined only when the planner can prove its body strict);
-- a NULL argument gives NULL either way.
CREATE FUNCTION forum.bm25_term_score(tf double precision, doc_len double precision, avgdl double precision,
                                      k1 double precision, b double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avgdl))
$$;

-- Same signature, defaults, rows and planner settings as before; only the formula moved.
-- CREATE OR REPLACE resets a function's SET clauses, so 012's are restated here.
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

  -- weight = qtf * idf; bound = weight * the term's largest possible saturated tf.
  WITH q AS (SELECT * FROM forum.bm25_query_terms(p_query))
  SELECT array_agg(x.term ORDER BY x.bound DESC, x.term), array_agg(x.weight ORDER BY x.bound DESC, x.term),
         array_agg(x.bound ORDER BY x.bound DESC, x.term), array_agg(x.df ORDER BY x.bound DESC, x.term),
         bool_and(x.weight >= 0)
    INTO q_terms, q_weights, q_bounds, q_dfs, monotone
    FROM (SELECT i.term, i.df, q.qtf * i.idf AS weight,
                 q.qtf * i.idf * forum.bm25_term_score(i.max_tf, i.min_doc_len, avgdl, p_k1, p_b) AS bound
            FROM q JOIN forum.bm25_idf(ARRAY(SELECT q.term FROM q), p_epsilon) i USING (term)) x;
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
