-- Issue 23: a quote copied from a PDF viewer keeps a word's line-break hyphen ("recom- mended", "T- cell") where
-- the stored text has the word whole. The verbatim check (DEL-3) forgives that layout difference and nothing
-- else: besides the whitespace-normalised quote, two readings of a quote with such a break are looked for —
-- hyphen and space dropped between lower-case ASCII letters and the space alone dropped elsewhere
-- ("recommended", "T-cell"), or the space alone dropped everywhere ("well-known"). Each reading must still match
-- with whole words (sql/080); case, punctuation and wording stay exact. atlas/deliberation/quotes.py applies the
-- same rule, and a test holds the two together.
CREATE FUNCTION forum.quote_readings(p_needle text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN p_needle ~ '[A-Za-z0-9]- [A-Za-z0-9]' THEN ARRAY[
           p_needle,
           regexp_replace(regexp_replace(p_needle, '([a-z])- (?=[a-z])', '\1', 'g'),
                          '([A-Za-z0-9])- (?=[A-Za-z0-9])', '\1-', 'g'),
           regexp_replace(p_needle, '([A-Za-z0-9])- (?=[A-Za-z0-9])', '\1-', 'g')]
         ELSE ARRAY[p_needle] END
$$;

CREATE OR REPLACE FUNCTION forum.citation_verbatim_matches(p_chunk_id bigint, p_quote text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(
    (SELECT bool_or(forum.whole_words_in(h.hay, r.needle))
       FROM forum.chunks c
            CROSS JOIN LATERAL (SELECT forum.normalize_whitespace(c.body) AS hay) h
            CROSS JOIN LATERAL unnest(forum.quote_readings(forum.normalize_whitespace(p_quote))) AS r(needle)
      WHERE c.chunk_id = p_chunk_id),
    false)
$$;
