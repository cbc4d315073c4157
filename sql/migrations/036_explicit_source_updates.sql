-- A source's metadata (importance, quality, sector, licence, url) weighs every one of its
-- documents in retrieval and briefs. Ingest used to rewrite it whenever a row reused the source's
-- name. Now only an explicit update may change it: the writer (`atlas sources update`) sets
-- forum.source_update = 'explicit' for its transaction and records a SOURCE_UPDATED event with
-- the values before and after; any other UPDATE of these columns is refused.
CREATE FUNCTION forum.refuse_implicit_source_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.name, NEW.importance, NEW.quality_score, NEW.sector, NEW.licence, NEW.url)
     IS DISTINCT FROM (OLD.name, OLD.importance, OLD.quality_score, OLD.sector, OLD.licence, OLD.url)
     AND coalesce(current_setting('forum.source_update', true), '') <> 'explicit' THEN
    RAISE EXCEPTION 'source % changes only through an explicit, recorded update (atlas sources update)', OLD.name
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER sources_explicit_update BEFORE UPDATE ON forum.sources
  FOR EACH ROW EXECUTE FUNCTION forum.refuse_implicit_source_update();
