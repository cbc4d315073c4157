-- Faster bulk writes, same guarantees.
-- 1. Lexical columns are computed once per row by a trigger instead of two generated expressions
--    (to_tsvector dominated COPY time). The trigger overrides whatever a client sends, so the
--    columns still always equal forum.analyze(heading, body).
ALTER TABLE forum.chunks ALTER COLUMN lexemes DROP EXPRESSION;
ALTER TABLE forum.chunks ALTER COLUMN token_count DROP EXPRESSION;
ALTER TABLE forum.chunks ALTER COLUMN lexemes SET NOT NULL;
ALTER TABLE forum.chunks ALTER COLUMN token_count SET NOT NULL;

CREATE FUNCTION forum.set_chunk_lexemes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.lexemes := forum.analyze(NEW.heading, NEW.body);
  NEW.token_count := forum.tsvector_token_count(NEW.lexemes);
  RETURN NEW;
END $$;
CREATE TRIGGER chunks_lexemes BEFORE INSERT OR UPDATE OF heading, body, lexemes, token_count ON forum.chunks
  FOR EACH ROW EXECUTE FUNCTION forum.set_chunk_lexemes();

-- 2. Registering a model no longer builds its HNSW index: a bulk load writes first and builds the
--    index once at the end (an incremental HNSW insert costs ~5x a build per row). Until the index
--    exists, dense search is exact (a sequential scan), never wrong.
CREATE OR REPLACE FUNCTION forum.ensure_embedding_model(p_name text, p_engine text, p_version text, p_dim integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE m forum.embedding_models;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('forum.embedding_models'));
  SELECT * INTO m FROM forum.embedding_models WHERE name = p_name;
  IF FOUND THEN
    IF m.dim <> p_dim THEN
      RAISE EXCEPTION 'embedding model % is registered with dimension %, not %', p_name, m.dim, p_dim;
    END IF;
    RETURN m.model_id;
  END IF;
  INSERT INTO forum.embedding_models (name, engine, version, dim) VALUES (p_name, p_engine, p_version, p_dim)
  RETURNING * INTO m;
  RETURN m.model_id;
END $$;

CREATE FUNCTION forum.embedding_index_name(p_model_id integer) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT 'embeddings_hnsw_m' || p_model_id $$;

-- Build the model's HNSW cosine index if it is missing; true when it was built now.
CREATE FUNCTION forum.ensure_embedding_index(p_model_id integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE m forum.embedding_models;
BEGIN
  SELECT * INTO STRICT m FROM forum.embedding_models WHERE model_id = p_model_id;
  IF to_regclass('forum.' || forum.embedding_index_name(p_model_id)) IS NOT NULL THEN
    RETURN false;
  END IF;
  EXECUTE format(
    'CREATE INDEX %I ON forum.embeddings USING hnsw ((embedding::vector(%s)) vector_cosine_ops) WHERE model_id = %s',
    forum.embedding_index_name(p_model_id), m.dim, m.model_id);
  RETURN true;
END $$;

CREATE FUNCTION forum.drop_embedding_index(p_model_id integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DROP INDEX IF EXISTS forum.%I', forum.embedding_index_name(p_model_id));
END $$;
