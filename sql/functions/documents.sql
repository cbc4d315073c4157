-- Documents and chunks: the analyzer, the chunk triggers' functions, staged chunk inserts, pages and sections.

-- Token count of a tsvector as BM25 sees it: every lexeme repeated by its number of positions.
CREATE OR REPLACE FUNCTION forum.tsvector_token_count(v tsvector) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer FROM unnest(v)
$$;

-- The one analyzer, used at index and query time alike: PostgreSQL's `english` configuration
-- (Snowball stemming, English stop words) over the document title followed by the chunk text.
CREATE OR REPLACE FUNCTION forum.analyze(heading text, body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT to_tsvector('english'::regconfig, coalesce(heading, '') || E'\n' || coalesce(body, ''))
$$;

-- A document that stops being current, or is retracted/withdrawn/superseded, takes its chunks out
-- of retrieval in the same transaction (ING-6 fails closed).
CREATE OR REPLACE FUNCTION forum.sync_chunk_searchable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE forum.chunks
     SET searchable = (NEW.is_current AND NOT NEW.retracted AND NOT NEW.withdrawn AND NOT NEW.superseded)
   WHERE document_id = NEW.document_id
     AND searchable IS DISTINCT FROM
         (NEW.is_current AND NOT NEW.retracted AND NOT NEW.withdrawn AND NOT NEW.superseded);
  RETURN NULL;
END $$;

-- Offsets must slice the document back to the exact chunk text; checked once per statement, in time linear
-- in the document's size. substr() on UTF-8 text counts characters from the start of the value, so an ASCII
-- body (character offsets = byte offsets, the common case) is compared as a bytea slice, and any other is cut
-- once into 255-character blocks (the largest bounded repeat PostgreSQL's regex accepts) of which each chunk
-- reads the few it spans.
CREATE OR REPLACE FUNCTION forum.check_chunk_offsets() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  c           record;
  doc         bigint;
  ascii_body  bytea;    -- the document's body when it is ASCII
  blocks      text[];   -- otherwise its 255-character blocks
  piece       text;
BEGIN
  FOR c IN SELECT document_id, chunk_key, start_char, end_char, body FROM new_chunks ORDER BY document_id LOOP
    IF doc IS DISTINCT FROM c.document_id THEN
      doc := c.document_id;
      SELECT CASE WHEN octet_length(d.body) = char_length(d.body) THEN convert_to(d.body, 'UTF8') END
        INTO ascii_body FROM forum.documents d WHERE d.document_id = doc;
      blocks := CASE WHEN ascii_body IS NULL THEN
                  ARRAY(SELECT r.m[1]
                          FROM forum.documents d, regexp_matches(d.body, '.{1,255}', 'g') WITH ORDINALITY AS r(m, k)
                         WHERE d.document_id = doc ORDER BY r.k) END;
    END IF;
    IF ascii_body IS NOT NULL THEN
      -- past the end the slice is short, and differs from the chunk
      piece := convert_from(substring(ascii_body FROM c.start_char + 1 FOR c.end_char - c.start_char), 'UTF8');
    ELSE
      piece := '';
      FOR k IN c.start_char / 255 + 1 .. (c.end_char - 1) / 255 + 1 LOOP
        piece := piece || blocks[k];  -- past the document's end blocks[k] is NULL, and so is piece
      END LOOP;
      piece := substr(piece, c.start_char % 255 + 1, c.end_char - c.start_char);
    END IF;
    IF piece IS DISTINCT FROM c.body THEN
      RAISE EXCEPTION 'chunk % does not match its document at its offsets', c.chunk_key
        USING ERRCODE = 'check_violation';
    END IF;
  END LOOP;
  RETURN NULL;
END $$;

-- Trusted only while forum.insert_staged_chunks() runs: it raises the flag, as the table's owner, around its
-- own INSERT and lowers it before returning. A client that sets the flag itself is not the owner (or, as the
-- owner, could drop the trigger anyway), so its rows are recomputed.
CREATE OR REPLACE FUNCTION forum.set_chunk_lexemes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('forum.staged_lexemes', true) = 'on'
     AND current_user = (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = TG_RELID) THEN
    RETURN NEW;
  END IF;
  NEW.lexemes := forum.analyze(NEW.heading, NEW.body);
  NEW.token_count := forum.tsvector_token_count(NEW.lexemes);
  RETURN NEW;
END $$;

-- Inserts the staged chunks of the calling transaction into forum.chunks (their statement-level triggers
-- check offsets, record digests and update BM25 as for a COPY) and returns how many it inserted.
-- The SET clauses hold only while it runs: the planner, which does not know how costly the analyzer is, may
-- use parallel workers on a staging table of any size; the join of a 10 MB record's chunks with their
-- lexemes (~30 MB) sorts in memory, not in temporary files (4 MB: ~0.2 s more); and the flag is down
-- again on return, however it ends.
CREATE OR REPLACE FUNCTION forum.insert_staged_chunks() RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET min_parallel_table_scan_size = 0 SET parallel_setup_cost = 0 SET parallel_tuple_cost = 0
SET work_mem = '64MB'
SET forum.staged_lexemes = 'off' AS $$
DECLARE
  this_xact bigint := pg_current_xact_id()::text::bigint;   -- a value: a query using it may still run in parallel
  inserted  bigint;
BEGIN
  CREATE TEMPORARY TABLE staged_lexemes ON COMMIT DROP AS
    SELECT s.seq, a.lexemes, forum.tsvector_token_count(a.lexemes) AS token_count
      FROM forum.chunk_stage s CROSS JOIN LATERAL forum.analyze(s.heading, s.body) AS a(lexemes)
     WHERE s.xact = this_xact;
  PERFORM set_config('forum.staged_lexemes', 'on', true);
  INSERT INTO forum.chunks (chunk_key, document_id, ordinal, start_char, end_char, heading, body, searchable,
                            lexemes, token_count)
  SELECT s.chunk_key, s.document_id, s.ordinal, s.start_char, s.end_char, s.heading, s.body, s.searchable,
         l.lexemes, l.token_count
    FROM forum.chunk_stage s JOIN staged_lexemes l USING (seq)
   WHERE s.xact = this_xact
   ORDER BY s.seq;
  GET DIAGNOSTICS inserted = ROW_COUNT;
  PERFORM set_config('forum.staged_lexemes', 'off', true);
  DELETE FROM forum.chunk_stage WHERE xact = this_xact;
  DROP TABLE staged_lexemes;
  RETURN inserted;
END $$;

-- 1-based page holding the character at char_offset; NULL for a document without a page map.
CREATE OR REPLACE FUNCTION forum.page_at(page_starts jsonb, char_offset integer) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN jsonb_typeof(page_starts) = 'array' THEN
           greatest((SELECT count(*) FROM jsonb_array_elements_text(page_starts) AS s(v) WHERE s.v::integer <= char_offset), 1)::integer
         END
$$;

-- First and last page of the characters [start_char, end_char).
CREATE OR REPLACE FUNCTION forum.chunk_pages(page_starts jsonb, start_char integer, end_char integer, OUT first_page integer,
                                  OUT last_page integer)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.page_at(page_starts, start_char), forum.page_at(page_starts, greatest(end_char - 1, start_char))
$$;

-- Title of the section holding char_offset: the last one that starts at or before it.
CREATE OR REPLACE FUNCTION forum.section_at(sections jsonb, char_offset integer) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT s.entry ->> 2 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(sections) = 'array' THEN sections END)
                            WITH ORDINALITY AS s(entry, n)
   WHERE (s.entry ->> 0)::integer <= char_offset ORDER BY (s.entry ->> 0)::integer DESC, s.n DESC LIMIT 1
$$;
