-- Tamper evidence over every record a reader relies on (issue 25, item 1).
--
-- 1. Content digests (032) now also cover briefs, their sections, claims, citations and provider
--    calls, series observations, forecasts and their bindings: one overload of
--    forum.content_digest per table, recorded at insert by statement trigger and anchored by the
--    transaction's next audit event, as before. Rows stored before this migration get their digests
--    now, anchored by one baseline event.
-- 2. The two tables keyed by a pair get a row id of their own, so that a digest (and a finding)
--    names one row: brief_sections.section_id and series_observations.observation_id.
-- 3. Verification no longer runs in the database: `atlas audit verify` reads the raw rows and
--    recomputes every digest, anchor and chain link in Python (forum_atlas.integrity), so a
--    superuser who replaces a stored function cannot make it say "intact". The stored verifying
--    functions are dropped; the digest functions stay, for the triggers that write.
--
-- Every digest is sha256 over the text form of ROW(...) of the content columns, with timestamps as
-- epoch microseconds, dates as day numbers and floats as their IEEE bits (032): forms no session
-- setting changes, and that forum_atlas.integrity reproduces byte for byte.

ALTER TABLE forum.brief_sections ADD COLUMN section_id bigint GENERATED ALWAYS AS IDENTITY UNIQUE;
ALTER TABLE forum.series_observations ADD COLUMN observation_id bigint GENERATED ALWAYS AS IDENTITY UNIQUE;

CREATE FUNCTION forum.content_digest(b forum.briefs) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(b.brief_id, b.question, forum.epoch_us(b.created_at), forum.epoch_us(b.recorded_at),
                               b.snapshot_id, b.audit::text, b.engines::text, b.extractive, b.redactions,
                               b.flow_run_id, b.plan::text)::text)
$$;
CREATE FUNCTION forum.content_digest(s forum.brief_sections) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(s.section_id, s.brief_id, s.ordinal, s.kind, s.role, s.topic, s.insufficient,
                               s.attempts, s.engine)::text)
$$;
CREATE FUNCTION forum.content_digest(c forum.brief_claims) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(c.claim_id, c.brief_id, c.section_ordinal, c.ordinal, c.text, c.claimed_tag, c.tag,
                               c.chunk_id, c.source_label, c.quote, c.verdict, c.failed, c.detail)::text)
$$;
CREATE FUNCTION forum.content_digest(t forum.citations) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(t.citation_id, t.brief_id, t.claim_id, t.chunk_id, t.document_id, t.document_version,
                               t.source_id, t.quote, t.importance, t.quality_score, t.recency_label,
                               forum.epoch_us(t.published_at), forum.epoch_us(t.cited_at))::text)
$$;
CREATE FUNCTION forum.content_digest(p forum.provider_calls) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(p.call_id, p.brief_id, p.ordinal, p.stage, p.provider, p.version, p.input_digest,
                               p.outcome, forum.float_bits(p.latency_ms), p.attempts, p.detail, p.prompt_hash,
                               p.flow_run_id, p.task_run_id, forum.epoch_us(p.recorded_at))::text)
$$;
CREATE FUNCTION forum.content_digest(o forum.series_observations) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(o.observation_id, o.vintage_id, forum.day_number(o.observation_date),
                               forum.float_bits(o.value))::text)
$$;
CREATE FUNCTION forum.content_digest(f forum.forecasts) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(f.forecast_id, f.question, f.requested_via, forum.epoch_us(f.issued_at),
                               forum.epoch_us(f.recorded_at), forum.float_bits(f.confidence_target), f.n_samples,
                               f.seed, forum.float_bits(f.base_rate), forum.float_bits(f.probability),
                               forum.float_bits(f.ci_low), forum.float_bits(f.ci_high), f.ci_method, f.ci_basis,
                               f.distribution::text, f.drivers::text, f.engine::text, f.flow_run_id)::text)
$$;
CREATE FUNCTION forum.content_digest(b forum.forecast_bindings) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT forum.sha256_text(ROW(b.forecast_id, b.question_key, b.series_id, b.comparator, forum.float_bits(b.threshold),
                               forum.day_number(b.reference_date), forum.day_number(b.target_date),
                               forum.epoch_us(b.deadline), forum.epoch_us(b.bound_at), b.issue_vintage_id)::text)
$$;

-- Each newly covered table and its id column: digests recorded at insert; the rows already stored
-- digested now, anchored below by one baseline event (none when these tables are empty).
DO $$
DECLARE t record;
BEGIN
  FOR t IN SELECT * FROM (VALUES ('briefs', 'brief_id'), ('brief_sections', 'section_id'),
                                 ('brief_claims', 'claim_id'), ('citations', 'citation_id'),
                                 ('provider_calls', 'call_id'), ('series_observations', 'observation_id'),
                                 ('forecasts', 'forecast_id'), ('forecast_bindings', 'forecast_id')) AS v(name, id)
  LOOP
    EXECUTE format('CREATE TRIGGER %1$I AFTER INSERT ON forum.%2$I REFERENCING NEW TABLE AS new_rows
                    FOR EACH STATEMENT EXECUTE FUNCTION forum.record_content_digests(%3$L)',
                   t.name || '_content_digests', t.name, t.id);
    EXECUTE format('INSERT INTO forum.content_digests (table_name, row_id, digest)
                    SELECT %1$L, r.%2$I, forum.content_digest(r) FROM forum.%1$I r ORDER BY 2', t.name, t.id);
  END LOOP;
END $$;

-- Verification reads raw rows from Python now; nothing may call the stored verifiers by mistake.
DROP FUNCTION forum.verify_content_digests();
DROP FUNCTION forum.verify_event_chain();
DROP VIEW forum.protected_rows;

INSERT INTO forum.events (kind, payload)
SELECT 'CONTENT_DIGESTS_BASELINE', jsonb_build_object('migration', '120_digests_of_every_record')
 WHERE EXISTS (SELECT 1 FROM forum.content_digests
                WHERE xact = pg_current_xact_id()::text::bigint
                  AND seq > coalesce(nullif(current_setting('forum.digests_anchored_through', true), ''), '0')::bigint);
