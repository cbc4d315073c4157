-- Functions every area uses: append-only refusal, table counts, the sources' explicit-update guard.

-- Append-only tables attach this to BEFORE UPDATE/DELETE/TRUNCATE: the database, not the
-- application, refuses to rewrite history.
CREATE OR REPLACE FUNCTION forum.refuse_mutation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'forum.% is append-only: % refused', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'insufficient_privilege';
END $$;

-- Row counts of every table in the schema (later migrations' tables included).
CREATE OR REPLACE FUNCTION forum.table_counts() RETURNS TABLE (table_name text, row_count bigint)
LANGUAGE plpgsql STABLE AS $$
DECLARE t record;
BEGIN
  FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'forum' AND c.relkind IN ('r', 'p') ORDER BY c.relname LOOP
    table_name := t.relname;
    EXECUTE format('SELECT count(*) FROM forum.%I', t.relname) INTO row_count;
    RETURN NEXT;
  END LOOP;
END $$;

-- A source's metadata (importance, quality, sector, licence, url) weighs every one of its
-- documents in retrieval and briefs, so only an explicit update may change it: the writer (`atlas sources update`) sets
-- forum.source_update = 'explicit' for its transaction and records a SOURCE_UPDATED event with
-- the values before and after; any other UPDATE of these columns is refused.
CREATE OR REPLACE FUNCTION forum.refuse_implicit_source_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.name, NEW.importance, NEW.quality_score, NEW.sector, NEW.licence, NEW.url)
     IS DISTINCT FROM (OLD.name, OLD.importance, OLD.quality_score, OLD.sector, OLD.licence, OLD.url)
     AND coalesce(current_setting('forum.source_update', true), '') <> 'explicit' THEN
    RAISE EXCEPTION 'source % changes only through an explicit, recorded update (atlas sources update)', OLD.name
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
