-- The analyzer (to_tsvector over each chunk) was the largest part of a batch's write: the chunks_lexemes
-- trigger ran it row by row in the one backend serving the COPY, ~2.5 s of a 10 MB record's ~6 s write
-- while the machine's other cores sat idle (issue 10). The writer now stages a batch's chunks and calls
-- forum.insert_staged_chunks(), which computes the lexical columns with a parallel query and inserts the
-- chunks with them. The columns still always equal the analyzer's output: the trigger accepts them only
-- from that function, which computed them itself; every other insert or update is recomputed as before.

-- Parallel workers cannot read a temporary table, so the staging table is a real one. A writer's rows are
-- visible to its own transaction only, the function reads only its own transaction's rows and deletes them,
-- so a client that committed staged rows without calling it never has them inserted by another writer.
-- Unlogged: the rows need no WAL.
CREATE UNLOGGED TABLE forum.chunk_stage (
  xact        bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
  seq         integer NOT NULL,   -- the writer's order, which the chunk ids follow
  chunk_key   text NOT NULL,
  document_id bigint NOT NULL,
  ordinal     integer NOT NULL,
  start_char  integer NOT NULL,
  end_char    integer NOT NULL,
  heading     text NOT NULL,
  body        text NOT NULL,
  searchable  boolean NOT NULL
);

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
-- use parallel workers on a staging table of any size; and the flag is down again on return, however it ends.
CREATE FUNCTION forum.insert_staged_chunks() RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET min_parallel_table_scan_size = 0 SET parallel_setup_cost = 0 SET parallel_tuple_cost = 0
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
