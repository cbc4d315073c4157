-- Tamper evidence (AUD-5): the audit chain, content digests of protected rows and their anchors.

-- Audit log: append-only and hash-chained, so an edit anywhere breaks verification from there on.
CREATE OR REPLACE FUNCTION forum.event_hash(prev text, id bigint, at timestamptz, kind text, run text, payload jsonb)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT encode(sha256(convert_to(concat_ws(E'\x1f', prev, id::text,
         ((extract(epoch FROM at) * 1000000)::bigint)::text, kind, coalesce(run, ''), payload::text), 'UTF8')), 'hex')
$$;

-- Text forms that no session setting can change (DateStyle, TimeZone, extra_float_digits).
CREATE OR REPLACE FUNCTION forum.epoch_us(t timestamptz) RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (extract(epoch FROM t) * 1000000)::bigint
$$;

CREATE OR REPLACE FUNCTION forum.day_number(d date) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT d - DATE '2000-01-01'
$$;

CREATE OR REPLACE FUNCTION forum.float_bits(x double precision) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT encode(float8send(x), 'hex')
$$;

CREATE OR REPLACE FUNCTION forum.sha256_text(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT encode(sha256(convert_to(t, 'UTF8')), 'hex')
$$;

-- One overload per protected table, over its content columns (never its status flags). A vintage's
-- `partial` (031) is content: it decides whether the vintage is used for scoring.
-- Every overload is STABLE, what its body is (record_out and convert_to are STABLE): PostgreSQL inlines a
-- SQL function only when its body is no less immutable than its declaration, and an IMMUTABLE one ran
-- through the SQL-function executor once per row (100,000 scores: ~2.2 s against ~0.65 s inlined; 10,000
-- chunks: ~0.19 s CPU against ~0.12 s). Same bodies, same digests.
CREATE OR REPLACE FUNCTION forum.content_digest(c forum.chunks) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(c.chunk_id, c.chunk_key, c.document_id, c.ordinal, c.start_char, c.end_char,
                               c.heading, c.body)::text)
$$;

CREATE OR REPLACE FUNCTION forum.content_digest(d forum.documents) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(d.document_id, d.source_id, d.external_id, d.version, d.content_hash, d.title,
                               d.body, d.url, forum.epoch_us(d.published_at), d.sector, d.metadata::text,
                               forum.epoch_us(d.ingested_at))::text)
$$;

CREATE OR REPLACE FUNCTION forum.content_digest(v forum.series_vintages) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(v.vintage_id, v.series_id, v.label, forum.epoch_us(v.fetched_at),
                               forum.epoch_us(v.recorded_at), v.connector, v.origin, v.content_hash, v.row_count,
                               forum.day_number(v.first_date), forum.day_number(v.last_date), v.partial)::text)
$$;

CREATE OR REPLACE FUNCTION forum.content_digest(e forum.evidence_snapshots) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(e.snapshot_id, forum.sha256_text(e.canonical), e.seal, e.part_digests::text,
                               forum.epoch_us(e.created_at))::text)
$$;

-- Chunks and documents keep their content: only status flags change.
CREATE OR REPLACE FUNCTION forum.refuse_content_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'forum.% keeps its content: UPDATE of % % refused (only status flags change)',
    TG_TABLE_NAME, TG_ARGV[0], to_jsonb(OLD) ->> TG_ARGV[0]
    USING ERRCODE = 'insufficient_privilege';
END $$;

-- `digests` is NULL for an event that anchors nothing, and then row_hash is forum.event_hash; otherwise
-- row_hash also covers it.
CREATE OR REPLACE FUNCTION forum.event_row_hash(prev text, id bigint, at timestamptz, kind text, run text, payload jsonb,
                                     digests jsonb)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN digests IS NULL THEN forum.event_hash(prev, id, at, kind, run, payload)
              ELSE forum.sha256_text(concat_ws(E'\x1f', forum.event_hash(prev, id, at, kind, run, payload),
                                               digests::text)) END
$$;

-- Per table: rows and a digest over "row_id:digest" in row order, of this transaction's digests
-- with after < seq <= through.
CREATE OR REPLACE FUNCTION forum.digest_anchor(p_xact bigint, p_after bigint, p_through bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_object_agg(t.table_name, jsonb_build_object('rows', t.n, 'digest', t.d))
    FROM (SELECT cd.table_name, count(*) AS n,
                 forum.sha256_text(string_agg(cd.row_id::text || ':' || cd.digest, ',' ORDER BY cd.row_id)) AS d
            FROM forum.content_digests cd
           WHERE cd.xact = p_xact AND cd.seq > p_after AND cd.seq <= p_through
           GROUP BY cd.table_name) t
$$;

-- Chains each event to the previous one and anchors the content digests its transaction wrote since.
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

-- AFTER INSERT, per statement: TG_ARGV[0] names the table's id column. A transition table's rows are of
-- type record: cast to the table's row type for its digest overload.
CREATE OR REPLACE FUNCTION forum.record_content_digests() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format(
    'INSERT INTO forum.content_digests (table_name, row_id, digest)
     SELECT %L, t.%2$I, forum.content_digest(t::forum.%1$I) FROM new_rows t ORDER BY 2',
    TG_TABLE_NAME, TG_ARGV[0]);
  RETURN NULL;
END $$;

-- A score row's digest covers the columns of the newer scoring versions (sql/migrations/110) only when it has
-- one of them: every brier-v1 row digests as it did when it was written, so every recorded digest stays valid.
CREATE OR REPLACE FUNCTION forum.content_digest(s forum.forecast_scores) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(CASE
    WHEN num_nonnulls(s.log_score, s.deadline_vintage_id, s.deadline_outcome) = 0 THEN
      ROW(s.score_id, s.forecast_id, s.scoring_version, s.vintage_id, s.status, s.outcome,
          forum.float_bits(s.probability), forum.float_bits(s.brier),
          forum.day_number(s.target_date), s.target_present, forum.float_bits(s.target_value),
          forum.day_number(s.reference_date), s.reference_present,
          forum.float_bits(s.reference_value), s.reason, forum.epoch_us(s.scored_at))::text
    ELSE
      ROW(s.score_id, s.forecast_id, s.scoring_version, s.vintage_id, s.status, s.outcome,
          forum.float_bits(s.probability), forum.float_bits(s.brier),
          forum.day_number(s.target_date), s.target_present, forum.float_bits(s.target_value),
          forum.day_number(s.reference_date), s.reference_present,
          forum.float_bits(s.reference_value), s.reason, forum.epoch_us(s.scored_at),
          forum.float_bits(s.log_score), s.deadline_vintage_id, s.deadline_outcome)::text END)
$$;

CREATE OR REPLACE FUNCTION forum.content_digest(b forum.briefs) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(b.brief_id, b.question, forum.epoch_us(b.created_at), forum.epoch_us(b.recorded_at),
                               b.snapshot_id, b.audit::text, b.engines::text, b.extractive, b.redactions,
                               b.flow_run_id, b.plan::text)::text)
$$;

CREATE OR REPLACE FUNCTION forum.content_digest(s forum.brief_sections) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(s.section_id, s.brief_id, s.ordinal, s.kind, s.role, s.topic, s.insufficient,
                               s.attempts, s.engine)::text)
$$;

CREATE OR REPLACE FUNCTION forum.content_digest(c forum.brief_claims) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(c.claim_id, c.brief_id, c.section_ordinal, c.ordinal, c.text, c.claimed_tag, c.tag,
                               c.chunk_id, c.source_label, c.quote, c.verdict, c.failed, c.detail)::text)
$$;

CREATE OR REPLACE FUNCTION forum.content_digest(t forum.citations) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(t.citation_id, t.brief_id, t.claim_id, t.chunk_id, t.document_id, t.document_version,
                               t.source_id, t.quote, t.importance, t.quality_score, t.recency_label,
                               forum.epoch_us(t.published_at), forum.epoch_us(t.cited_at))::text)
$$;

CREATE OR REPLACE FUNCTION forum.content_digest(p forum.provider_calls) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(p.call_id, p.brief_id, p.ordinal, p.stage, p.provider, p.version, p.input_digest,
                               p.outcome, forum.float_bits(p.latency_ms), p.attempts, p.detail, p.prompt_hash,
                               p.flow_run_id, p.task_run_id, forum.epoch_us(p.recorded_at))::text)
$$;

CREATE OR REPLACE FUNCTION forum.content_digest(o forum.series_observations) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(o.observation_id, o.vintage_id, forum.day_number(o.observation_date),
                               forum.float_bits(o.value))::text)
$$;

CREATE OR REPLACE FUNCTION forum.content_digest(f forum.forecasts) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(f.forecast_id, f.question, f.requested_via, forum.epoch_us(f.issued_at),
                               forum.epoch_us(f.recorded_at), forum.float_bits(f.confidence_target), f.n_samples,
                               f.seed, forum.float_bits(f.base_rate), forum.float_bits(f.probability),
                               forum.float_bits(f.ci_low), forum.float_bits(f.ci_high), f.ci_method, f.ci_basis,
                               f.distribution::text, f.drivers::text, f.engine::text, f.flow_run_id)::text)
$$;

CREATE OR REPLACE FUNCTION forum.content_digest(b forum.forecast_bindings) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(b.forecast_id, b.question_key, b.series_id, b.comparator, forum.float_bits(b.threshold),
                               forum.day_number(b.reference_date), forum.day_number(b.target_date),
                               forum.epoch_us(b.deadline), forum.epoch_us(b.bound_at), b.issue_vintage_id)::text)
$$;
