-- Schema v1: sources, versioned documents, chunks with lexical data, embeddings, audit log.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE SCHEMA IF NOT EXISTS forum;

-- Append-only tables attach this to BEFORE UPDATE/DELETE/TRUNCATE: the database, not the
-- application, refuses to rewrite history.
CREATE FUNCTION forum.refuse_mutation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'forum.% is append-only: % refused', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'insufficient_privilege';
END $$;

CREATE TABLE forum.sources (
  source_id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name          text NOT NULL UNIQUE CHECK (length(btrim(name)) > 0),
  importance    smallint NOT NULL CHECK (importance BETWEEN 1 AND 5),   -- 5 = canonical, 1 = supplemental
  quality_score smallint NOT NULL CHECK (quality_score BETWEEN 1 AND 5),
  sector        text NOT NULL DEFAULT 'general',
  licence       text NOT NULL,
  url           text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);

-- One row per version of a document; a version is identified by the hash of its content.
CREATE TABLE forum.documents (
  document_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  source_id    bigint NOT NULL REFERENCES forum.sources,
  external_id  text NOT NULL CHECK (length(external_id) > 0),
  version      integer NOT NULL CHECK (version >= 1),
  content_hash text NOT NULL CHECK (content_hash ~ '^[0-9a-f]{64}$'),
  title        text NOT NULL DEFAULT '',
  body         text NOT NULL CHECK (length(btrim(body)) > 0),
  url          text,
  published_at timestamptz,
  sector       text NOT NULL DEFAULT 'general',
  metadata     jsonb NOT NULL DEFAULT '{}',
  is_current   boolean NOT NULL DEFAULT true,
  retracted    boolean NOT NULL DEFAULT false,
  withdrawn    boolean NOT NULL DEFAULT false,
  superseded   boolean NOT NULL DEFAULT false,
  ingested_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (source_id, external_id, version),
  UNIQUE (source_id, external_id, content_hash)
);
CREATE UNIQUE INDEX documents_one_current ON forum.documents (source_id, external_id) WHERE is_current;

-- Token count of a tsvector as BM25 sees it: every lexeme repeated by its number of positions.
CREATE FUNCTION forum.tsvector_token_count(v tsvector) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer FROM unnest(v)
$$;

-- The one analyzer, used at index and query time alike: PostgreSQL's `english` configuration
-- (Snowball stemming, English stop words) over the document title followed by the chunk text.
CREATE FUNCTION forum.analyze(heading text, body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT to_tsvector('english'::regconfig, coalesce(heading, '') || E'\n' || coalesce(body, ''))
$$;

CREATE TABLE forum.chunks (
  chunk_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  chunk_key   text NOT NULL UNIQUE,            -- stable id derived from document identity + offsets
  document_id bigint NOT NULL REFERENCES forum.documents,
  ordinal     integer NOT NULL CHECK (ordinal >= 0),
  start_char  integer NOT NULL CHECK (start_char >= 0),
  end_char    integer NOT NULL,
  heading     text NOT NULL DEFAULT '',
  body        text NOT NULL CHECK (length(body) > 0),
  searchable  boolean NOT NULL DEFAULT true,   -- false once the document is superseded, retracted or withdrawn
  lexemes     tsvector NOT NULL,               -- forum.analyze(heading, body), set by chunks_lexemes
  token_count integer NOT NULL,                -- tokens as BM25 counts them, set by chunks_lexemes
  CHECK (end_char > start_char),
  CHECK (end_char - start_char = length(body)),
  UNIQUE (document_id, ordinal)
);
CREATE INDEX chunks_document ON forum.chunks (document_id);

-- Lexical columns are computed once per row here rather than by two generated expressions (the
-- analyzer dominates COPY time). The trigger overrides whatever a client sends, so the columns
-- always equal the analyzer's output.
CREATE FUNCTION forum.set_chunk_lexemes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.lexemes := forum.analyze(NEW.heading, NEW.body);
  NEW.token_count := forum.tsvector_token_count(NEW.lexemes);
  RETURN NEW;
END $$;
CREATE TRIGGER chunks_lexemes BEFORE INSERT OR UPDATE OF heading, body, lexemes, token_count ON forum.chunks
  FOR EACH ROW EXECUTE FUNCTION forum.set_chunk_lexemes();

-- Offsets must slice the document back to the exact chunk text; checked once per statement.
CREATE FUNCTION forum.check_chunk_offsets() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE bad record;
BEGIN
  SELECT c.chunk_key INTO bad
    FROM new_chunks c JOIN forum.documents d USING (document_id)
   WHERE substr(d.body, c.start_char + 1, c.end_char - c.start_char) IS DISTINCT FROM c.body
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'chunk % does not match its document at its offsets', bad.chunk_key
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER chunks_offsets_match AFTER INSERT ON forum.chunks
  REFERENCING NEW TABLE AS new_chunks FOR EACH STATEMENT EXECUTE FUNCTION forum.check_chunk_offsets();

-- A document that stops being current, or is retracted/withdrawn/superseded, takes its chunks out
-- of retrieval in the same transaction (ING-6 fails closed).
CREATE FUNCTION forum.sync_chunk_searchable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE forum.chunks
     SET searchable = (NEW.is_current AND NOT NEW.retracted AND NOT NEW.withdrawn AND NOT NEW.superseded)
   WHERE document_id = NEW.document_id
     AND searchable IS DISTINCT FROM
         (NEW.is_current AND NOT NEW.retracted AND NOT NEW.withdrawn AND NOT NEW.superseded);
  RETURN NULL;
END $$;
CREATE TRIGGER documents_searchable AFTER UPDATE OF is_current, retracted, withdrawn, superseded
  ON forum.documents FOR EACH ROW EXECUTE FUNCTION forum.sync_chunk_searchable();

CREATE TABLE forum.embedding_models (
  model_id   integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name       text NOT NULL UNIQUE,               -- e.g. hashed-bow-v1@384, voyage-3
  engine     text NOT NULL,
  version    text NOT NULL,
  dim        integer NOT NULL CHECK (dim BETWEEN 1 AND 16000),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE forum.embeddings (
  chunk_id  bigint NOT NULL REFERENCES forum.chunks,
  model_id  integer NOT NULL REFERENCES forum.embedding_models,
  embedding vector NOT NULL,
  PRIMARY KEY (chunk_id, model_id)
);

-- Register a model (idempotent; refuses a known name with a different dimension). Its HNSW index
-- is built separately: a bulk load writes first and builds the index once at the end (an
-- incremental HNSW insert costs ~5x a build per row). Until the index exists, dense search is
-- exact (a sequential scan), never wrong.
CREATE FUNCTION forum.ensure_embedding_model(p_name text, p_engine text, p_version text, p_dim integer)
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

-- Each model gets its own HNSW cosine index: a partial expression index, since models differ in
-- dimension. True when it was built now.
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

-- Audit log: append-only and hash-chained, so an edit anywhere breaks verification from there on.
CREATE SEQUENCE forum.events_seq;
CREATE TABLE forum.events (
  event_id    bigint PRIMARY KEY,
  occurred_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  kind        text NOT NULL CHECK (kind ~ '^[A-Z][A-Z0-9_]*$'),
  flow_run_id text,
  payload     jsonb NOT NULL DEFAULT '{}',
  prev_hash   text NOT NULL,
  row_hash    text NOT NULL
);

CREATE FUNCTION forum.event_hash(prev text, id bigint, at timestamptz, kind text, run text, payload jsonb)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT encode(sha256(convert_to(concat_ws(E'\x1f', prev, id::text,
         ((extract(epoch FROM at) * 1000000)::bigint)::text, kind, coalesce(run, ''), payload::text), 'UTF8')), 'hex')
$$;

CREATE FUNCTION forum.chain_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Ids are drawn under the lock so that id order is chain order even with concurrent writers.
  PERFORM pg_advisory_xact_lock(hashtext('forum.events'));
  NEW.event_id := nextval('forum.events_seq');
  NEW.prev_hash := coalesce((SELECT row_hash FROM forum.events ORDER BY event_id DESC LIMIT 1), 'genesis');
  NEW.row_hash := forum.event_hash(NEW.prev_hash, NEW.event_id, NEW.occurred_at, NEW.kind, NEW.flow_run_id, NEW.payload);
  RETURN NEW;
END $$;
CREATE TRIGGER events_chain BEFORE INSERT ON forum.events FOR EACH ROW EXECUTE FUNCTION forum.chain_event();
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON forum.events
  FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON forum.events
  FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();

CREATE FUNCTION forum.verify_event_chain() RETURNS TABLE (event_id bigint, problem text)
LANGUAGE sql STABLE AS $$
  WITH ordered AS (
    SELECT e.*, lag(e.row_hash, 1, 'genesis') OVER (ORDER BY e.event_id) AS expected_prev
      FROM forum.events e)
  SELECT o.event_id,
         CASE WHEN o.prev_hash <> o.expected_prev THEN 'prev_hash does not match the preceding row'
              ELSE 'row_hash does not match the row content' END
    FROM ordered o
   WHERE o.prev_hash <> o.expected_prev
      OR o.row_hash <> forum.event_hash(o.prev_hash, o.event_id, o.occurred_at, o.kind, o.flow_run_id, o.payload)
   ORDER BY o.event_id
$$;

-- Row counts of every table in the schema (later migrations' tables included).
CREATE FUNCTION forum.table_counts() RETURNS TABLE (table_name text, row_count bigint)
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
