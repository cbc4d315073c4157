-- Issue 23: documents read from paged files (PDF) keep their page map in metadata -> 'page_starts' (the offset
-- in the stored body where each page begins) and their section titles in metadata -> 'sections'
-- ([[offset, level, title], …]). A chunk's pages and section follow from its offsets: computed here, so that every
-- reader of a chunk (search, briefs, passages) derives the same page range from the one stored map.

-- 1-based page holding the character at char_offset; NULL for a document without a page map.
CREATE FUNCTION forum.page_at(page_starts jsonb, char_offset integer) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN jsonb_typeof(page_starts) = 'array' THEN
           greatest((SELECT count(*) FROM jsonb_array_elements_text(page_starts) AS s(v) WHERE s.v::integer <= char_offset), 1)::integer
         END
$$;

-- First and last page of the characters [start_char, end_char).
CREATE FUNCTION forum.chunk_pages(page_starts jsonb, start_char integer, end_char integer, OUT first_page integer,
                                  OUT last_page integer)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.page_at(page_starts, start_char), forum.page_at(page_starts, greatest(end_char - 1, start_char))
$$;

-- Title of the section holding char_offset: the last one that starts at or before it.
CREATE FUNCTION forum.section_at(sections jsonb, char_offset integer) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT s.entry ->> 2 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(sections) = 'array' THEN sections END)
                            WITH ORDINALITY AS s(entry, n)
   WHERE (s.entry ->> 0)::integer <= char_offset ORDER BY (s.entry ->> 0)::integer DESC, s.n DESC LIMIT 1
$$;
