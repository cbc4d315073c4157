-- Two first ingests at once could both pass forum.ensure_embedding_index's "does the index exist?"
-- check and collide in the catalog (pg_class_relname_nsp_index). The check and the CREATE INDEX
-- now run under one transaction-scoped advisory lock per model: the second caller waits, then
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
