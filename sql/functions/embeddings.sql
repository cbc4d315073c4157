-- Embedding models and their HNSW indexes.

-- Register a model (idempotent; refuses a known name with a different dimension). Its HNSW index
-- is built separately: a bulk load writes first and builds the index once at the end (an
-- incremental HNSW insert costs ~5x a build per row). Until the index exists, dense search is
-- exact (a sequential scan), never wrong.
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

CREATE OR REPLACE FUNCTION forum.embedding_index_name(p_model_id integer) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT 'embeddings_hnsw_m' || p_model_id $$;

-- Two first ingests at once could both pass forum.ensure_embedding_index's "does the index exist?"
-- check and collide in the catalog (pg_class_relname_nsp_index). The check and the CREATE INDEX
-- run under one transaction-scoped advisory lock per model: the second caller waits, then
-- finds the index and returns false.
CREATE OR REPLACE FUNCTION forum.ensure_embedding_index(p_model_id integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE m forum.embedding_models;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('forum.ensure_embedding_index'), p_model_id);
  SELECT * INTO STRICT m FROM forum.embedding_models WHERE model_id = p_model_id;
  IF to_regclass('forum.' || forum.embedding_index_name(p_model_id)) IS NOT NULL THEN
    RETURN false;
  END IF;
  EXECUTE format(
    'CREATE INDEX %I ON forum.embeddings USING hnsw ((embedding::vector(%s)) vector_cosine_ops) WHERE model_id = %s',
    forum.embedding_index_name(p_model_id), m.dim, m.model_id);
  RETURN true;
END $$;

-- Dropping (a bulk load rebuilds the index once at its end) takes the same lock.
CREATE OR REPLACE FUNCTION forum.drop_embedding_index(p_model_id integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('forum.ensure_embedding_index'), p_model_id);
  EXECUTE format('DROP INDEX IF EXISTS forum.%I', forum.embedding_index_name(p_model_id));
END $$;
