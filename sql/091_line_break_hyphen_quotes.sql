-- Issue 23: a quote copied from a PDF viewer keeps a word's line-break hyphen ("recom- mended", "T- cell") where
-- the stored text has the word whole. The verbatim check (DEL-3) forgives that layout difference and nothing
-- else: besides the whitespace-normalised quote, two readings of a quote with such a break are looked for —
-- hyphen and space dropped between lower-case ASCII letters and the space alone dropped elsewhere
-- ("recommended", "T-cell"), or the space alone dropped everywhere ("well-known"). Case, punctuation and wording
-- stay exact. atlas/deliberation/quotes.py applies the same rule, and a test holds the two together.
CREATE OR REPLACE FUNCTION forum.citation_verbatim_matches(p_chunk_id bigint, p_quote text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(
    (SELECT q.needle <> '' AND (
              strpos(h.hay, q.needle) > 0
              OR (q.needle ~ '[A-Za-z0-9]- [A-Za-z0-9]' AND (
                    strpos(h.hay, regexp_replace(regexp_replace(q.needle, '([a-z])- (?=[a-z])', '\1', 'g'),
                                                 '([A-Za-z0-9])- (?=[A-Za-z0-9])', '\1-', 'g')) > 0
                    OR strpos(h.hay, regexp_replace(q.needle, '([A-Za-z0-9])- (?=[A-Za-z0-9])', '\1-', 'g')) > 0)))
       FROM forum.chunks c
            CROSS JOIN LATERAL (SELECT forum.normalize_whitespace(c.body) AS hay) h
            CROSS JOIN (SELECT forum.normalize_whitespace(p_quote) AS needle) q
      WHERE c.chunk_id = p_chunk_id),
    false)
$$;
