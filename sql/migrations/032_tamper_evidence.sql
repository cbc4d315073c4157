-- Tamper evidence that reaches the data that matters (AUD-5).
--
-- 1. Chunks and documents keep their content: UPDATE of a content column and DELETE/TRUNCATE are
--    refused. Status flags (is_current, retracted, withdrawn, superseded; chunks.searchable) still
--    change, and the derived lexical columns are still recomputed by chunks_lexemes.
-- 2. Every row written to a protected table (chunks, documents, forecast_scores, series_vintages,
--    evidence_snapshots) gets a content digest in forum.content_digests, by statement trigger, in
--    the writing transaction. The next audit event of that transaction anchors those digests: the
--    chain trigger stores, per table, the row count and a digest over (row id, row digest) in the
--    event's `digests` column, which its row_hash covers. `forum.verify_content_digests()`
--    recomputes every row's digest and every anchor, naming the row or event that differs.
-- 3. The chain head (last event id and row_hash) is exported by `atlas audit head` and checked by
--    `atlas audit verify --head ID:HASH`: a truncated tail or a recomputed chain no longer reaches it.

-- ------------------------------------------------------------------ digests of protected rows
-- Text forms that no session setting can change (DateStyle, TimeZone, extra_float_digits).
CREATE FUNCTION forum.epoch_us(t timestamptz) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (extract(epoch FROM t) * 1000000)::bigint
$$;
CREATE FUNCTION forum.day_number(d date) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT d - DATE '2000-01-01'
$$;
CREATE FUNCTION forum.float_bits(x double precision) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT encode(float8send(x), 'hex')
$$;
CREATE FUNCTION forum.sha256_text(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT encode(sha256(convert_to(t, 'UTF8')), 'hex')
$$;

-- One overload per protected table, over its content columns (never its status flags). A vintage's
-- `partial` (031) is content: it decides whether the vintage is used for scoring.
CREATE FUNCTION forum.content_digest(c forum.chunks) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(c.chunk_id, c.chunk_key, c.document_id, c.ordinal, c.start_char, c.end_char,
                               c.heading, c.body)::text)
$$;
CREATE FUNCTION forum.content_digest(d forum.documents) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(d.document_id, d.source_id, d.external_id, d.version, d.content_hash, d.title,
                               d.body, d.url, forum.epoch_us(d.published_at), d.sector, d.metadata::text,
                               forum.epoch_us(d.ingested_at))::text)
$$;
CREATE FUNCTION forum.content_digest(s forum.forecast_scores) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(s.score_id, s.forecast_id, s.scoring_version, s.vintage_id, s.status, s.outcome,
                               forum.float_bits(s.probability), forum.float_bits(s.brier),
                               forum.day_number(s.target_date), s.target_present, forum.float_bits(s.target_value),
                               forum.day_number(s.reference_date), s.reference_present,
                               forum.float_bits(s.reference_value), s.reason, forum.epoch_us(s.scored_at))::text)
$$;
CREATE FUNCTION forum.content_digest(v forum.series_vintages) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(v.vintage_id, v.series_id, v.label, forum.epoch_us(v.fetched_at),
                               forum.epoch_us(v.recorded_at), v.connector, v.origin, v.content_hash, v.row_count,
                               forum.day_number(v.first_date), forum.day_number(v.last_date), v.partial)::text)
$$;
CREATE FUNCTION forum.content_digest(e forum.evidence_snapshots) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(e.snapshot_id, forum.sha256_text(e.canonical), e.seal, e.part_digests::text,
                               forum.epoch_us(e.created_at))::text)
$$;

-- Every protected row as it is now, with its digest recomputed.
CREATE VIEW forum.protected_rows AS
          SELECT 'chunks'::text AS table_name, c.chunk_id AS row_id, forum.content_digest(c) AS digest FROM forum.chunks c
UNION ALL SELECT 'documents', d.document_id, forum.content_digest(d) FROM forum.documents d
UNION ALL SELECT 'forecast_scores', s.score_id, forum.content_digest(s) FROM forum.forecast_scores s
UNION ALL SELECT 'series_vintages', v.vintage_id, forum.content_digest(v) FROM forum.series_vintages v
UNION ALL SELECT 'evidence_snapshots', e.snapshot_id, forum.content_digest(e) FROM forum.evidence_snapshots e;

-- The digests recorded at write time. `xact`/`seq` say which transaction wrote the row and in what
-- order, so that the transaction's next audit event can anchor exactly the digests not yet anchored.
CREATE SEQUENCE forum.content_digests_seq;
CREATE TABLE forum.content_digests (
  table_name text NOT NULL,
  row_id     bigint NOT NULL,
  digest     text NOT NULL CHECK (digest ~ '^[0-9a-f]{64}$'),
  xact       bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
  seq        bigint NOT NULL DEFAULT nextval('forum.content_digests_seq'),
  PRIMARY KEY (table_name, row_id)
);
CREATE INDEX content_digests_anchor ON forum.content_digests (xact, seq);
CREATE TRIGGER content_digests_append_only BEFORE UPDATE OR DELETE ON forum.content_digests
  FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER content_digests_no_truncate BEFORE TRUNCATE ON forum.content_digests
  FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();

-- AFTER INSERT, per statement: TG_ARGV[0] names the table's id column.
CREATE FUNCTION forum.record_content_digests() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format(
    'INSERT INTO forum.content_digests (table_name, row_id, digest)
     SELECT %L, t.%2$I, forum.content_digest(t) FROM forum.%1$I t JOIN new_rows n USING (%2$I) ORDER BY 2',
    TG_TABLE_NAME, TG_ARGV[0]);
  RETURN NULL;
END $$;
CREATE TRIGGER chunks_content_digests AFTER INSERT ON forum.chunks REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION forum.record_content_digests('chunk_id');
CREATE TRIGGER documents_content_digests AFTER INSERT ON forum.documents REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION forum.record_content_digests('document_id');
CREATE TRIGGER forecast_scores_content_digests AFTER INSERT ON forum.forecast_scores REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION forum.record_content_digests('score_id');
CREATE TRIGGER series_vintages_content_digests AFTER INSERT ON forum.series_vintages REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION forum.record_content_digests('vintage_id');
CREATE TRIGGER evidence_snapshots_content_digests AFTER INSERT ON forum.evidence_snapshots REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION forum.record_content_digests('snapshot_id');

-- ------------------------------------------------------------------ chunks and documents keep their content
CREATE FUNCTION forum.refuse_content_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'forum.% keeps its content: UPDATE of % % refused (only status flags change)',
    TG_TABLE_NAME, TG_ARGV[0], to_jsonb(OLD) ->> TG_ARGV[0]
    USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER chunks_content_immutable BEFORE UPDATE ON forum.chunks FOR EACH ROW
  WHEN ((OLD.chunk_id, OLD.chunk_key, OLD.document_id, OLD.ordinal, OLD.start_char, OLD.end_char, OLD.heading, OLD.body)
        IS DISTINCT FROM
        (NEW.chunk_id, NEW.chunk_key, NEW.document_id, NEW.ordinal, NEW.start_char, NEW.end_char, NEW.heading, NEW.body))
  EXECUTE FUNCTION forum.refuse_content_change('chunk_id');
CREATE TRIGGER documents_content_immutable BEFORE UPDATE ON forum.documents FOR EACH ROW
  WHEN ((OLD.document_id, OLD.source_id, OLD.external_id, OLD.version, OLD.content_hash, OLD.title, OLD.body, OLD.url,
         OLD.published_at, OLD.sector, OLD.metadata, OLD.ingested_at)
        IS DISTINCT FROM
        (NEW.document_id, NEW.source_id, NEW.external_id, NEW.version, NEW.content_hash, NEW.title, NEW.body, NEW.url,
         NEW.published_at, NEW.sector, NEW.metadata, NEW.ingested_at))
  EXECUTE FUNCTION forum.refuse_content_change('document_id');
CREATE TRIGGER chunks_no_delete BEFORE DELETE ON forum.chunks FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER chunks_no_truncate BEFORE TRUNCATE ON forum.chunks FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER documents_no_delete BEFORE DELETE ON forum.documents FOR EACH ROW EXECUTE FUNCTION forum.refuse_mutation();
CREATE TRIGGER documents_no_truncate BEFORE TRUNCATE ON forum.documents FOR EACH STATEMENT EXECUTE FUNCTION forum.refuse_mutation();

-- ------------------------------------------------------------------ events anchor the digests
-- `digests` is NULL for an event that anchors nothing, and then row_hash is forum.event_hash as
-- before (events written before this migration verify unchanged); otherwise row_hash also covers it.
ALTER TABLE forum.events ADD COLUMN digests jsonb;

CREATE FUNCTION forum.event_row_hash(prev text, id bigint, at timestamptz, kind text, run text, payload jsonb,
                                     digests jsonb)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN digests IS NULL THEN forum.event_hash(prev, id, at, kind, run, payload)
              ELSE forum.sha256_text(concat_ws(E'\x1f', forum.event_hash(prev, id, at, kind, run, payload),
                                               digests::text)) END
$$;

-- Per table: rows and a digest over "row_id:digest" in row order, of this transaction's digests
-- with after < seq <= through.
CREATE FUNCTION forum.digest_anchor(p_xact bigint, p_after bigint, p_through bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_object_agg(t.table_name, jsonb_build_object('rows', t.n, 'digest', t.d))
    FROM (SELECT cd.table_name, count(*) AS n,
                 forum.sha256_text(string_agg(cd.row_id::text || ':' || cd.digest, ',' ORDER BY cd.row_id)) AS d
            FROM forum.content_digests cd
           WHERE cd.xact = p_xact AND cd.seq > p_after AND cd.seq <= p_through
           GROUP BY cd.table_name) t
$$;

CREATE OR REPLACE FUNCTION forum.chain_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_xact bigint;
  v_after bigint;
  v_through bigint;
BEGIN
  -- Ids are drawn under the lock so that id order is chain order even with concurrent writers.
  PERFORM pg_advisory_xact_lock(hashtext('forum.events'));
  NEW.event_id := nextval('forum.events_seq');
  NEW.prev_hash := coalesce((SELECT row_hash FROM forum.events ORDER BY event_id DESC LIMIT 1), 'genesis');
  -- Anchor the content digests this transaction wrote since its previous event.
  NEW.digests := NULL;
  v_xact := pg_current_xact_id()::text::bigint;
  v_after := coalesce(nullif(current_setting('forum.digests_anchored_through', true), ''), '0')::bigint;
  SELECT max(seq) INTO v_through FROM forum.content_digests WHERE xact = v_xact AND seq > v_after;
  IF v_through IS NOT NULL THEN
    NEW.digests := jsonb_build_object('xact', v_xact, 'after', v_after, 'through', v_through,
                                      'tables', forum.digest_anchor(v_xact, v_after, v_through));
    PERFORM set_config('forum.digests_anchored_through', v_through::text, true);
  END IF;
  NEW.row_hash := forum.event_row_hash(NEW.prev_hash, NEW.event_id, NEW.occurred_at, NEW.kind, NEW.flow_run_id,
                                       NEW.payload, NEW.digests);
  RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION forum.verify_event_chain() RETURNS TABLE (event_id bigint, problem text)
LANGUAGE sql STABLE AS $$
  WITH ordered AS (
    SELECT e.*, lag(e.row_hash, 1, 'genesis') OVER (ORDER BY e.event_id) AS expected_prev
      FROM forum.events e)
  SELECT o.event_id,
         CASE WHEN o.prev_hash <> o.expected_prev THEN 'prev_hash does not match the preceding row'
              ELSE 'row_hash does not match the row content' END
    FROM ordered o
   WHERE o.prev_hash <> o.expected_prev
      OR o.row_hash <> forum.event_row_hash(o.prev_hash, o.event_id, o.occurred_at, o.kind, o.flow_run_id,
                                            o.payload, o.digests)
   ORDER BY o.event_id
$$;

-- Every protected row against the digest recorded when it was written, and every anchor against
-- the digests it anchors. One row per problem; table_name/row_id name the row, event_id the anchor.
CREATE FUNCTION forum.verify_content_digests()
RETURNS TABLE (table_name text, row_id bigint, event_id bigint, problem text)
LANGUAGE sql STABLE AS $$
  WITH anchors AS (
    SELECT e.event_id, (e.digests ->> 'xact')::bigint AS xact, (e.digests ->> 'after')::bigint AS after,
           (e.digests ->> 'through')::bigint AS through, coalesce(e.digests -> 'tables', '{}') AS tables
      FROM forum.events e WHERE e.digests IS NOT NULL),
  recorded AS (
    SELECT cd.table_name, cd.row_id, cd.digest, a.event_id
      FROM forum.content_digests cd
      LEFT JOIN anchors a ON a.xact = cd.xact AND cd.seq > a.after AND cd.seq <= a.through),
  recomputed AS (
    SELECT a.event_id, a.tables, coalesce(forum.digest_anchor(a.xact, a.after, a.through), '{}') AS now
      FROM anchors a),
  problems AS (
    -- Each row as it is now against the digest recorded when it was written.
    SELECT coalesce(p.table_name, r.table_name) AS table_name, coalesce(p.row_id, r.row_id) AS row_id, r.event_id,
           CASE WHEN r.row_id IS NULL THEN 'no digest was recorded for this row (written with triggers disabled)'
                WHEN p.row_id IS NULL THEN 'row is missing (deleted after it was written)'
                ELSE 'content differs from the digest recorded when it was written' END AS problem
      FROM forum.protected_rows p
      FULL JOIN recorded r ON r.table_name = p.table_name AND r.row_id = p.row_id
     WHERE p.digest IS DISTINCT FROM r.digest
    UNION ALL
    -- A digest that no event anchors is the attacker's as likely as the writer's.
    SELECT r.table_name, r.row_id, NULL, 'its digest is not anchored in the audit chain'
      FROM recorded r WHERE r.event_id IS NULL
    UNION ALL
    -- Each anchor against the digests it anchors: catches digests rewritten to match edited rows.
    SELECT k.key, NULL, c.event_id,
           CASE WHEN c.tables ? k.key THEN 'the digests this event anchors were altered or removed'
                ELSE 'digests were added to what this event anchors' END
      FROM recomputed c
      CROSS JOIN LATERAL jsonb_object_keys(c.tables || c.now) AS k(key)
     WHERE c.tables -> k.key IS DISTINCT FROM c.now -> k.key)
  SELECT * FROM problems ORDER BY event_id NULLS LAST, table_name, row_id
$$;

-- Rows stored before this migration: their digests are anchored by one baseline event (none when
-- the database is empty).
INSERT INTO forum.content_digests (table_name, row_id, digest)
SELECT table_name, row_id, digest FROM forum.protected_rows ORDER BY table_name, row_id;
INSERT INTO forum.events (kind, payload)
SELECT 'CONTENT_DIGESTS_BASELINE', jsonb_build_object('migration', '032_tamper_evidence')
 WHERE EXISTS (SELECT 1 FROM forum.content_digests);
