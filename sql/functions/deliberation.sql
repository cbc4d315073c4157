-- Briefs: the verbatim rule (DEL-3), recency labels (AUD-2), citation snapshots and the cited-claim check.

-- Whitespace normalisation, the same as Python's `" ".join(s.split())`: every run of the
-- characters str.split() splits on becomes one space, both ends trimmed. The set (tests compare
-- it with Python over every code point): U+0009-U+000D, U+001C-U+0020, U+0085, U+00A0, U+1680,
-- U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 (regex escapes in an E'' literal, so the
-- pattern is the same whatever standard_conforming_strings says).
CREATE OR REPLACE FUNCTION forum.normalize_whitespace(p_text text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT btrim(regexp_replace(p_text,
    E'[\\u0009-\\u000d\\u001c-\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]+', ' ', 'g'),
    ' ')
$$;

-- AUD-2's recency buckets, by the age of a document at a moment: just_now (< 60 min), hours
-- (< 24 h), days (< 7 days), weeks (< 30 days), months (< 365 days), older; undated when there is
-- no publication date or it lies after the moment.
CREATE OR REPLACE FUNCTION forum.recency_label(published_at timestamptz, at timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN published_at IS NULL OR at IS NULL OR published_at > at THEN 'undated'
    WHEN at - published_at < interval '60 minutes' THEN 'just_now'
    WHEN at - published_at < interval '24 hours' THEN 'hours'
    WHEN at - published_at < interval '7 days' THEN 'days'
    WHEN at - published_at < interval '30 days' THEN 'weeks'
    WHEN at - published_at < interval '365 days' THEN 'months'
    ELSE 'older' END
$$;

-- AUD-1/AUD-2: fills a citation's brief, document version, source, importance/quality, publication date and
-- recency label from the database, whatever the client sent, and refuses a quote not verbatim in the chunk.
CREATE OR REPLACE FUNCTION forum.snapshot_citation() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  claim forum.brief_claims;
  src record;
BEGIN
  SELECT * INTO claim FROM forum.brief_claims WHERE claim_id = NEW.claim_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'citation of claim %: no such claim', NEW.claim_id USING ERRCODE = 'foreign_key_violation';
  END IF;
  IF claim.tag <> 'SOURCED' THEN
    RAISE EXCEPTION 'citation of claim %: only a verified SOURCED claim is cited (it is %)', NEW.claim_id, claim.tag
      USING ERRCODE = 'check_violation';
  END IF;
  NEW.chunk_id := coalesce(NEW.chunk_id, claim.chunk_id);
  NEW.quote := coalesce(NEW.quote, claim.quote);
  IF NEW.chunk_id IS DISTINCT FROM claim.chunk_id OR NEW.quote IS DISTINCT FROM claim.quote THEN
    RAISE EXCEPTION 'citation of claim %: chunk and quote must be the claim''s own', NEW.claim_id
      USING ERRCODE = 'check_violation';
  END IF;
  SELECT d.document_id, d.version, d.source_id, d.published_at, s.importance, s.quality_score INTO src
    FROM forum.chunks c JOIN forum.documents d USING (document_id) JOIN forum.sources s USING (source_id)
   WHERE c.chunk_id = NEW.chunk_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'citation of claim %: no such chunk %', NEW.claim_id, NEW.chunk_id
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  IF NOT forum.citation_verbatim_matches(NEW.chunk_id, NEW.quote) THEN
    RAISE EXCEPTION 'citation of claim %: the quote does not occur verbatim in chunk % (whitespace aside)',
      NEW.claim_id, NEW.chunk_id USING ERRCODE = 'check_violation';
  END IF;
  NEW.brief_id := claim.brief_id;
  NEW.document_id := src.document_id;
  NEW.document_version := src.version;
  NEW.source_id := src.source_id;
  NEW.importance := src.importance;
  NEW.quality_score := src.quality_score;
  NEW.published_at := src.published_at;
  NEW.cited_at := now();
  NEW.recency_label := forum.recency_label(src.published_at, NEW.cited_at);
  RETURN NEW;
END $$;

-- A verified SOURCED claim without its citation is refused at commit.
CREATE OR REPLACE FUNCTION forum.check_claim_cited() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.tag = 'SOURCED' AND NOT EXISTS (SELECT 1 FROM forum.citations WHERE claim_id = NEW.claim_id) THEN
    RAISE EXCEPTION 'claim % of brief % is SOURCED but has no citation', NEW.claim_id, NEW.brief_id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;

-- Rule "whole-words-v2": a quote matches a chunk when, whitespace-normalised, it occurs in the
-- normalised body AND, where the quote begins (ends) with a word character, the body character just
-- before (after) the match is not one: "related to breast cancer risk" no longer matches inside
-- "were unrelated to breast cancer risk", nor "risk" inside "risks". Case and punctuation are kept.
-- Every occurrence is tried, not only the first.
--
-- A word character is any character that is not whitespace and not listed below as punctuation or
-- a symbol: ASCII punctuation and symbols (the underscore included), Latin-1 punctuation and
-- symbols U+00A1-U+00BF, U+00D7 and U+00F7, General Punctuation U+2000-U+206F, arrows and
-- mathematical and technical symbols U+2190-U+23FF, CJK punctuation U+3000-U+303F. Letters, digits
-- and marks of every script are word characters. The set is spelled out, not taken from the
-- database's locale, so every server answers alike; atlas.deliberation.quotes holds the same set
-- and a test compares the two over every code point.
CREATE OR REPLACE FUNCTION forum.is_word_char(p_char text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT p_char !~ E'^[\\u0009-\\u000d\\u001c-\\u002f\\u003a-\\u0040\\u005b-\\u0060\\u007b-\\u007e\\u0085\\u00a0-\\u00bf\\u00d7\\u00f7\\u1680\\u2000-\\u206f\\u2190-\\u23ff\\u3000-\\u303f]'
$$;

-- True iff p_needle occurs in p_haystack with whole words at both of its ends (both already normalised).
CREATE OR REPLACE FUNCTION forum.whole_words_in(p_haystack text, p_needle text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  n integer := length(p_needle);
  hay_length integer := length(p_haystack);
  guard_start boolean;
  guard_end boolean;
  from_pos integer := 1;
  at integer;
BEGIN
  IF p_haystack IS NULL OR p_needle IS NULL OR n = 0 THEN
    RETURN false;
  END IF;
  guard_start := forum.is_word_char(left(p_needle, 1));
  guard_end := forum.is_word_char(right(p_needle, 1));
  LOOP
    at := strpos(substr(p_haystack, from_pos), p_needle);
    EXIT WHEN at = 0;
    at := at + from_pos - 1;
    IF (NOT guard_start OR at = 1 OR NOT forum.is_word_char(substr(p_haystack, at - 1, 1)))
       AND (NOT guard_end OR at + n > hay_length OR NOT forum.is_word_char(substr(p_haystack, at + n, 1))) THEN
      RETURN true;
    END IF;
    from_pos := at + 1;
  END LOOP;
  RETURN false;
END $$;

-- The rule that sealed briefs before whole-words-v2 (sql/migrations/080): a plain substring, kept so that
-- `atlas verify` re-checks an old brief with the rule it was sealed under.
CREATE OR REPLACE FUNCTION forum.citation_verbatim_matches_v1(p_chunk_id bigint, p_quote text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(
    (SELECT q.needle <> '' AND strpos(forum.normalize_whitespace(c.body), q.needle) > 0
       FROM forum.chunks c, (SELECT forum.normalize_whitespace(p_quote) AS needle) q
      WHERE c.chunk_id = p_chunk_id),
    false)
$$;

-- Issue 23: a quote copied from a PDF viewer keeps a word's line-break hyphen ("recom- mended", "T- cell") where
-- the stored text has the word whole. The verbatim check (DEL-3) forgives that layout difference and nothing
-- else: besides the whitespace-normalised quote, two readings of a quote with such a break are looked for —
-- hyphen and space dropped between lower-case ASCII letters and the space alone dropped elsewhere
-- ("recommended", "T-cell"), or the space alone dropped everywhere ("well-known"). Each reading must still match
-- with whole words (sql/080); case, punctuation and wording stay exact. atlas/deliberation/quotes.py applies the
-- same rule, and a test holds the two together.
CREATE OR REPLACE FUNCTION forum.quote_readings(p_needle text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN p_needle ~ '[A-Za-z0-9]- [A-Za-z0-9]' THEN ARRAY[
           p_needle,
           regexp_replace(regexp_replace(p_needle, '([a-z])- (?=[a-z])', '\1', 'g'),
                          '([A-Za-z0-9])- (?=[A-Za-z0-9])', '\1-', 'g'),
           regexp_replace(p_needle, '([A-Za-z0-9])- (?=[A-Za-z0-9])', '\1-', 'g')]
         ELSE ARRAY[p_needle] END
$$;

-- The current rule (whole-words-v2 with the line-break readings); the citation trigger calls it.
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
