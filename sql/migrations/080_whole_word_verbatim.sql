-- Issue 22: the verbatim rule matches whole words (DEL-3), and the audit's new downgrade reasons.
--
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
CREATE FUNCTION forum.is_word_char(p_char text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT p_char !~ E'^[\\u0009-\\u000d\\u001c-\\u002f\\u003a-\\u0040\\u005b-\\u0060\\u007b-\\u007e\\u0085\\u00a0-\\u00bf\\u00d7\\u00f7\\u1680\\u2000-\\u206f\\u2190-\\u23ff\\u3000-\\u303f]'
$$;

-- True iff p_needle occurs in p_haystack with whole words at both of its ends (both already normalised).
CREATE FUNCTION forum.whole_words_in(p_haystack text, p_needle text) RETURNS boolean
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

-- The rule that sealed briefs before this migration (030): a plain substring, kept so that
-- `atlas verify` re-checks an old brief with the rule it was sealed under.
CREATE FUNCTION forum.citation_verbatim_matches_v1(p_chunk_id bigint, p_quote text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(
    (SELECT q.needle <> '' AND strpos(forum.normalize_whitespace(c.body), q.needle) > 0
       FROM forum.chunks c, (SELECT forum.normalize_whitespace(p_quote) AS needle) q
      WHERE c.chunk_id = p_chunk_id),
    false)
$$;

-- The current rule; the citation trigger (030) calls it, so no new citation can rest on a sub-word match.
CREATE OR REPLACE FUNCTION forum.citation_verbatim_matches(p_chunk_id bigint, p_quote text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(
    (SELECT forum.whole_words_in(forum.normalize_whitespace(c.body), forum.normalize_whitespace(p_quote))
       FROM forum.chunks c
      WHERE c.chunk_id = p_chunk_id),
    false)
$$;

-- The audit's reasons for taking a [SOURCED] tag away (atlas.deliberation.model.FailedCheck).
ALTER TABLE forum.brief_claims DROP CONSTRAINT brief_claims_failed_check;
ALTER TABLE forum.brief_claims ADD CONSTRAINT brief_claims_failed_check CHECK (failed IN (
  'no_quote', 'unknown_source', 'not_retrieved', 'quote_not_verbatim', 'contradicts', 'contextual',
  'unsafe_text', 'quote_uninformative', 'claim_not_covered', 'direction_clash', 'negation_clash',
  'not_in_findings'));
